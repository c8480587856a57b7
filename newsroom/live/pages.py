"""The first render of each live region, inside the page's HTTP response.

It is rendered from the saved snapshot with the same components the streams use;
the page tells its stream the digest of what it shows, so a stream whose first
render matches sends no frame at all.
"""

from __future__ import annotations

from html import escape

from django.templatetags.static import static
from django.urls import reverse

from newsroom.live import loaders
from newsroom.live.components import (
    ReaderView,
    article_region,
    dashboard_sidebar,
    run_sidebar,
)
from newsroom.live.render import Fragment, render_page
from newsroom.live.replica import RunReplica


def sidebar_page(reader_id: int) -> Fragment:
    run_id = loaders.latest_run_id(reader_id)
    status = loaders.run_status(run_id, reader_id) if run_id is not None else None
    replica = RunReplica(status, loaders.category_order(reader_id)) if status else None
    view = ReaderView(reader_id, replica, None)
    return render_page(dashboard_sidebar, view)[0]


def run_page(run_id: int, reader_id: int) -> Fragment | None:
    status = loaders.run_status(run_id, reader_id)
    if status is None:
        return None
    replica = RunReplica(status, loaders.category_order(reader_id))
    return render_page(run_sidebar, replica)[0]


def article_page(reader_id: int) -> Fragment:
    view = ReaderView(reader_id, None, loaders.latest_briefing(reader_id))
    return render_page(article_region, view)[0]


def socket_wrapper(path: str, page: Fragment, *, script: bool) -> str:
    """The region inside the element that holds its WebSocket (never replaced)."""
    url = f"{path}?have={page.digest}"
    tag = (
        f'<div class="live-socket" hx-ext="ws" ws-connect="{escape(url)}" '
        f'data-login-url="{escape(reverse("login"))}">{page.html}</div>'
    )
    if script:
        tag = (
            f'<link rel="stylesheet" href="{escape(static("live/live.css"))}">'
            + tag
            + f'<script src="{escape(static("live/live.js"))}" defer></script>'
        )
    return tag
