from __future__ import annotations

import logging
import threading
from datetime import date

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import close_old_connections
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_POST

from newsroom.briefing import graph as graphing
from newsroom.briefing.models import Briefing
from newsroom.briefing.service import write_briefing

log = logging.getLogger(__name__)


def _own(request: HttpRequest, pk: int) -> Briefing:
    # Another reader's briefing is a 404, not a 403: its existence is private too.
    return get_object_or_404(Briefing, pk=pk, reader=request.user)


@login_required
def briefing_list(request: HttpRequest) -> HttpResponse:
    """The archive: one row per day, the newest briefing of the day first."""
    days: dict[date, dict] = {}
    for b in Briefing.objects.filter(reader=request.user).defer(
        "text", "graph", "items"
    )[:500]:
        entry = days.setdefault(b.day, {"day": b.day, "latest": b, "versions": 0})
        entry["versions"] += 1
    return render(
        request,
        "briefing/briefing_list.html",
        {"days": list(days.values()), "today": timezone.localdate()},
    )


@login_required
def briefing_day(request: HttpRequest, day: str) -> HttpResponse:
    try:
        wanted = date.fromisoformat(day)
    except ValueError:
        raise Http404("No such day") from None
    briefing = Briefing.objects.filter(reader=request.user, day=wanted).first()
    if briefing is None:
        raise Http404("No briefing for that day")
    return _detail(request, briefing)


@login_required
def briefing_latest(request: HttpRequest) -> HttpResponse:
    briefing = Briefing.objects.filter(reader=request.user).first()
    if briefing is None:
        return redirect("briefing_list")
    return redirect(briefing)


@login_required
def briefing_detail(request: HttpRequest, pk: int) -> HttpResponse:
    return _detail(request, _own(request, pk))


def _detail(request: HttpRequest, briefing: Briefing) -> HttpResponse:
    numbers: dict[str, int] = {}
    sections = []
    for section in briefing.sections:
        claims = []
        for claim in section["claims"]:
            refs = []
            for ref in claim["refs"]:
                item = briefing.items.get(str(ref))
                if item is None:
                    continue  # never show a reference that does not resolve
                numbers.setdefault(str(ref), len(numbers) + 1)
                refs.append({"n": numbers[str(ref)], **item})
            claims.append({**claim, "ref_list": refs})
        sections.append({**section, "claim_list": claims})
    events = []
    for event in briefing.events:
        events.append(
            {
                **event,
                "item_list": [
                    {"id": i, **briefing.items[str(i)]}
                    for i in event["items"]
                    if str(i) in briefing.items
                ],
                "first": _parse(event["first_seen"]),
                "last": _parse(event["last_seen"]),
            }
        )
    versions = Briefing.objects.filter(reader=request.user, day=briefing.day).only(
        "id", "created_at", "model"
    )
    context = {
        "briefing": briefing,
        "sections": sections,
        "events": events,
        "svg": mark_safe(graphing.render_svg(briefing.graph))
        if briefing.graph.get("nodes")
        else "",
        "legend": graphing.legend(briefing.graph),
        "edges": briefing.graph.get("edges", []),
        "versions": versions,
        "source_count": len({s for e in briefing.events for s in e["sources"]}),
    }
    return render(request, "briefing/briefing_detail.html", context)


def _parse(value: str):
    from datetime import datetime

    try:
        return datetime.fromisoformat(value)
    except (TypeError, ValueError):
        return None


@login_required
def briefing_markdown(request: HttpRequest, pk: int) -> HttpResponse:
    briefing = _own(request, pk)
    response = HttpResponse(briefing.text, content_type="text/markdown; charset=utf-8")
    response["Content-Disposition"] = (
        f'attachment; filename="briefing-{briefing.day.isoformat()}.md"'
    )
    return response


@login_required
@require_POST
def briefing_write(request: HttpRequest) -> HttpResponse:
    """Write the briefing now. The built-in analyst takes a second or two, so
    it runs in the request; a model may stream for minutes, so it runs in a
    thread and the page hears about it through briefing_stored."""
    raw = request.POST.get("day") or timezone.localdate().isoformat()
    try:
        day = date.fromisoformat(raw)
    except ValueError:
        messages.error(request, f"{raw!r} is not a date (YYYY-MM-DD).")
        return redirect("briefing_list")
    reader = request.user
    if settings.NEWSROOM_LLM_URL:
        thread = threading.Thread(
            target=_write_in_background, args=(reader, day), daemon=True
        )
        thread.start()
        messages.info(
            request,
            f"Writing the briefing for {day.isoformat()} with {settings.NEWSROOM_LLM_MODEL}; "
            "it appears in the archive when it is stored.",
        )
        return redirect("briefing_list")
    briefing = write_briefing(reader, day)
    messages.success(
        request,
        f"Briefing written: {len(briefing.events)} events from {briefing.item_count} items.",
    )
    return redirect(briefing)


def _write_in_background(reader, day: date) -> None:
    close_old_connections()
    try:
        write_briefing(reader, day)
    except Exception:  # a thread has nobody to raise to: log it
        log.exception("Writing the briefing for %s failed", day)
    finally:
        close_old_connections()
