"""Database reads the live area needs, as plain data (sync; wrap for async)."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.urls import NoReverseMatch

from newsroom.runs.models import Run
from newsroom.runs.status import RunStatus
from newsroom.sources.models import Category


def run_status(run_id: int, reader_id: int | None = None) -> RunStatus | None:
    """The run's saved snapshot (Run.status) as a RunStatus; None when the run does
    not exist or belongs to another reader."""
    rows = Run.objects.filter(pk=run_id)
    if reader_id is not None:
        rows = rows.filter(reader_id=reader_id)
    row = rows.values("reader_id", "status", "state").first()
    if row is None:
        return None
    data = row["status"] or {}
    status = RunStatus.from_json(data, run_id, row["reader_id"])
    if not data:
        status.run_state = row["state"]
    return status


def category_order(reader_id: int) -> list[str]:
    """The reader's category names in their order on the dashboard."""
    return list(Category.objects.filter(reader_id=reader_id).values_list("name", flat=True))


def latest_run_id(reader_id: int) -> int | None:
    return (
        Run.objects.filter(reader_id=reader_id)
        .order_by("-created_at", "-id")
        .values_list("id", flat=True)
        .first()
    )


def latest_briefing(reader_id: int) -> dict[str, Any] | None:
    """The reader's latest briefing as plain data for the article region.

    The Briefing model belongs to the briefing area; until it is installed there
    is no briefing to show."""
    try:
        model = apps.get_model("newsroom", "Briefing")
    except LookupError:
        return None
    briefing = model.objects.filter(
        reader_id=reader_id
    ).first()  # model ordering: newest
    if briefing is None:
        return None
    try:
        url = briefing.get_absolute_url()
    except (AttributeError, NoReverseMatch):
        url = ""
    day = getattr(briefing, "day", None)
    created = getattr(briefing, "created_at", None)
    return {
        "id": briefing.pk,
        "title": f"Briefing for {day:%A %-d %B %Y}" if day else "Briefing",
        "text": getattr(briefing, "text", "") or "",
        "engine": getattr(briefing, "model", "") or getattr(briefing, "engine", ""),
        "created": f"written {created:%H:%M}" if created else "",
        "url": url,
    }
