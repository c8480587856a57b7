"""{% live_sidebar %}, {% live_run_sidebar run %} and {% live_article %}."""

from __future__ import annotations

from django import template
from django.utils.safestring import mark_safe

from newsroom.live import pages

register = template.Library()


def _script_once(context: template.Context) -> bool:
    # One live.js per page, however many regions it has.
    seen = context.render_context.get("live_script")
    context.render_context["live_script"] = True
    return not seen


@register.simple_tag(takes_context=True)
def live_sidebar(context: template.Context) -> str:
    reader = context["request"].user
    page = pages.sidebar_page(reader.pk)
    return mark_safe(
        pages.socket_wrapper("/ws/live/sidebar/", page, script=_script_once(context))
    )


@register.simple_tag(takes_context=True)
def live_run_sidebar(context: template.Context, run) -> str:
    reader = context["request"].user
    page = pages.run_page(run.pk, reader.pk)
    if page is None:
        return ""
    return mark_safe(
        pages.socket_wrapper(
            f"/ws/live/run/{run.pk}/", page, script=_script_once(context)
        )
    )


@register.simple_tag(takes_context=True)
def live_article(context: template.Context) -> str:
    reader = context["request"].user
    page = pages.article_page(reader.pk)
    return mark_safe(
        pages.socket_wrapper("/ws/live/article/", page, script=_script_once(context))
    )
