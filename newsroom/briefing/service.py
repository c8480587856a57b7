"""write_briefing: the one function that writes a reader's briefing for a day.

The `brief` command, the "Write briefing now" button and the runs area (after
each run) all call it. It never needs a receiver: it reports progress through
the briefing_progress signal and announces the stored briefing through
briefing_stored, and whoever listens (runs, live) does the rest.
"""

from __future__ import annotations

import logging
import time as timer
from collections.abc import Callable
from datetime import date, datetime, time, timedelta

import numpy as np
from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from fold_app.models import Item
from newsroom.briefing import categories as categorising
from newsroom.briefing import graph as graphing
from newsroom.briefing import text as textlib
from newsroom.briefing.analyst import Analyst
from newsroom.briefing.digest import Digest, Section, to_markdown
from newsroom.briefing.embed import Embedder, get_embedder
from newsroom.briefing.events import (
    Event,
    ItemView,
    attach_names,
    build_events,
    connect,
)
from newsroom.briefing.llm import LlmError, LlmWriter
from newsroom.briefing.models import Briefing
from newsroom.briefing.progress import Progress
from newsroom.briefing.signals import briefing_stored

log = logging.getLogger(__name__)

STORYLINE_DAYS = 7
COVERED_BRIEFINGS = 3


def default_writer() -> Analyst | LlmWriter:
    if settings.NEWSROOM_LLM_URL:
        return LlmWriter(
            settings.NEWSROOM_LLM_URL,
            settings.NEWSROOM_LLM_MODEL,
            settings.NEWSROOM_LLM_API_KEY,
            settings.NEWSROOM_LLM_TIMEOUT,
        )
    return Analyst()


def day_bounds(day: date) -> tuple[datetime, datetime]:
    tz = timezone.get_current_timezone()
    start = timezone.make_aware(datetime.combine(day, time.min), tz)
    return start, start + timedelta(days=1)


def items_of_day(reader, day: date) -> list[Item]:
    """The reader's items first seen, or published, on the day."""
    start, end = day_bounds(day)
    return list(
        Item.objects.filter(source__reader=reader)
        .filter(
            Q(first_seen_at__gte=start, first_seen_at__lt=end)
            | Q(published__gte=start, published__lt=end)
        )
        .select_related("source")
        .defer("html", "guid", "author")
        .order_by("first_seen_at", "id")
    )


def _view(item: Item, hosts: dict[int, str]) -> ItemView:
    source = item.source
    if source.id not in hosts:
        hosts[source.id] = textlib.host_of(source.site_url or source.url)
    return ItemView(
        id=item.id,
        title=item.title,
        text=item.text,
        url=item.url,
        source_id=source.id,
        source_name=source.display_title,
        source_host=hosts[source.id],
        published=item.published,
        first_seen=item.first_seen_at,
        category_id=item.category_id,
    )


def write_briefing(
    reader,
    day: date,
    run=None,
    *,
    writer: Analyst | LlmWriter | None = None,
    embedder: Embedder | None = None,
    now: datetime | None = None,
    echo: Callable[[dict, str | None], None] | None = None,
    all_pairs: bool = False,
) -> Briefing:
    """Write, store and announce the reader's briefing for `day`.

    Always returns a stored Briefing: when the model fails, the built-in
    analyst writes it and `fallback_reason` says why. `run` (optional) ties the
    progress to that run's live status. `all_pairs` scores every pair of items
    instead of LSH candidates: only the benchmark's baseline uses it.
    """
    started = timer.monotonic()
    writer = writer or default_writer()
    run_id = run.pk if run is not None else None
    progress = Progress(run_id, writer.engine, echo=echo)
    progress.stage(
        "gathering", f"Briefing for {day.isoformat()}: gathering the day's items"
    )
    now = now or timezone.now()
    start, end = day_bounds(day)
    as_of = min(now, end)

    categories = categorising.ensure_categories(reader)
    items = items_of_day(reader, day)
    hosts: dict[int, str] = {}
    views = [_view(i, hosts) for i in items]
    embedder = embedder or get_embedder()

    progress.stage("grouping", f"Grouping {len(views)} items into events")
    vectors = (
        embedder.encode([v.embed_text for v in views]) if views else np.zeros((0, 1))
    )
    source_categories = {i.source_id: i.source.category_id for i in items}
    placed = categorising.assign(
        views, vectors, categories, source_categories, embedder
    )
    _save_categories(placed)

    threshold = settings.NEWSROOM_BRIEFING_SAME_STORY
    events, _ = (
        build_events(views, vectors, threshold, as_of, all_pairs=all_pairs)
        if views
        else ([], None)
    )
    left_out = link_storylines(reader, day, events, embedder, threshold)
    shown = [e for e in events if not e.left_out]
    attach_names(shown)
    edges = [e.to_json() for e in connect(shown, threshold)]

    names = {c.id: c.name for c in categories}
    event_json = [e.to_json(names) for e in shown]
    colours = graphing.category_colours([c.id for c in categories])
    graph = graphing.build_graph(event_json, edges, colours)
    digest = Digest(
        day=day,
        categories=[(c.id, c.name) for c in categories],
        events=event_json,
        edges=edges,
        items={
            v.id: {
                "title": v.title,
                "url": v.url,
                "source": v.source_name,
                "text": v.text,
            }
            for e in shown
            for v in e.items
        },
    )

    progress.stage(
        "writing",
        f"{len(shown)} events ({left_out} already covered); writing with the {writer.model}",
        heading="",
    )
    sections, engine, model, reason = _write(writer, digest, progress)
    progress.flush()

    referenced = {r for s in sections for c in s.claims for r in c.refs}
    snapshot = {
        str(i): {
            "title": digest.items[i]["title"],
            "url": digest.items[i]["url"],
            "source": digest.items[i]["source"],
        }
        for i in sorted(referenced | {i for e in event_json for i in e["items"]})
    }
    section_json = [s.to_json() for s in sections]
    title = f"Briefing for {day.strftime('%A %-d %B %Y')}"
    briefing = Briefing.objects.create(
        reader=reader,
        day=day,
        run=run,
        engine=engine,
        model=model,
        fallback_reason=reason,
        sections=section_json,
        events=event_json,
        graph=graph,
        items=snapshot,
        text=to_markdown(title, section_json, snapshot),
        item_count=len(views),
        left_out=left_out,
        duration_ms=int((timer.monotonic() - started) * 1000),
    )
    progress.stage(
        "stored",
        f"Briefing stored: {len(shown)} events, {briefing.word_count} words ({model})",
    )
    transaction.on_commit(
        lambda: briefing_stored.send(sender=Briefing, briefing=briefing, reader=reader)
    )
    return briefing


def _write(
    writer, digest: Digest, progress: Progress
) -> tuple[list[Section], str, str, str]:
    """Sections from the writer; the built-in analyst when a model fails."""
    if isinstance(writer, LlmWriter):
        try:
            sections = writer.write(digest, progress.wrote)
            return sections, Briefing.Engine.LLM, writer.model, ""
        except Exception as e:  # noqa: BLE001 - a briefing is always written
            if isinstance(e, LlmError):
                reason = f"The model {writer.model} could not write this briefing: {e}."
                log.warning("%s Falling back to the built-in analyst.", reason)
            else:
                reason = f"The model {writer.model} failed unexpectedly ({type(e).__name__}: {e})."
                log.exception("%s Falling back to the built-in analyst.", reason)
            progress.stage(
                "writing",
                reason + " The built-in analyst writes it instead.",
                engine=Analyst.engine,
                words=0,
                heading="",
            )
            writer = Analyst()
            sections = writer.write(digest, progress.wrote)
            digest.verify(sections)
            return sections, Briefing.Engine.ANALYST, writer.model, reason
    sections = writer.write(digest, progress.wrote)
    digest.verify(sections)
    return sections, Briefing.Engine.ANALYST, writer.model, ""


def _save_categories(placed: dict[int, int]) -> None:
    by_category: dict[int, list[int]] = {}
    for item_id, category_id in placed.items():
        by_category.setdefault(category_id, []).append(item_id)
    for category_id, ids in by_category.items():
        for chunk in range(0, len(ids), 500):
            Item.objects.filter(id__in=ids[chunk : chunk + 500]).update(
                category_id=category_id
            )


def link_storylines(
    reader, day: date, events: list[Event], embedder: Embedder, threshold: float
) -> int:
    """Give each event its story: an earlier event of the last 7 days that shares
    an item link or title, or reads the same. Marks (and counts) the events whose
    story was in one of the last 3 briefings and that bring nothing new.

    Only earlier days count: a second briefing of the same day replaces the
    first rather than leaving out what the first one said.
    """
    for n, event in enumerate(events):
        event.story = f"{day.strftime('%Y%m%d')}-{n + 1}"
    earlier = list(
        Briefing.objects.filter(
            reader=reader, day__gte=day - timedelta(days=STORYLINE_DAYS), day__lt=day
        ).order_by("-day", "-created_at", "-id")
    )
    if not earlier or not events:
        return 0
    recent = {b.id for b in earlier[:COVERED_BRIEFINGS]}
    past: list[tuple[Briefing, dict]] = [(b, e) for b in earlier for e in b.events]
    if not past:
        return 0
    # Item identities each past event covered: normalised URLs and titles.
    covered: list[set[str]] = []
    for briefing, past_event in past:
        keys: set[str] = set()
        for item_id in past_event.get("items", []):
            item = briefing.items.get(str(item_id), {})
            keys.add("u:" + textlib.normalise_url(item.get("url", "")))
            keys.add("t:" + textlib.normalise_title(item.get("title", "")))
        keys.discard("u:")
        keys.discard("t:")
        covered.append(keys)
    past_vectors = embedder.encode(
        [f"{e['headline']}. {e.get('lead', '')}" for _, e in past]
    )
    current = np.stack([e.vector for e in events])
    sims = current @ past_vectors.T
    left_out = 0
    for n, event in enumerate(events):
        mine = {"u:" + textlib.normalise_url(i.url) for i in event.items} | {
            "t:" + textlib.normalise_title(i.title) for i in event.items
        }
        mine.discard("u:")
        mine.discard("t:")
        matches = [
            p
            for p in range(len(past))
            if sims[n, p] >= threshold or (mine & covered[p])
        ]
        if not matches:
            continue
        # The newest match carries the story id on.
        matches.sort(
            key=lambda p: (past[p][0].day, past[p][0].created_at), reverse=True
        )
        event.story = past[matches[0]][1].get("story") or event.story
        event.previous = [
            {
                "briefing": past[p][0].id,
                "day": past[p][0].day.isoformat(),
                "event": past[p][1]["key"],
                "headline": past[p][1]["headline"],
            }
            for p in sorted(matches, key=lambda p: (past[p][0].day, past[p][0].id))
        ]
        in_recent = [p for p in matches if past[p][0].id in recent]
        if in_recent:
            # New means a report the recent briefings did not carry: an
            # aggregator re-listing yesterday's links brings nothing new.
            seen_before = set().union(*(covered[p] for p in in_recent))
            fresh = [
                i
                for i in event.items
                if not (
                    {
                        "u:" + textlib.normalise_url(i.url),
                        "t:" + textlib.normalise_title(i.title),
                    }
                    & seen_before
                )
            ]
            if not fresh:
                event.left_out = True
                left_out += 1
    return left_out
