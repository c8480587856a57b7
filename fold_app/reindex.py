"""Rebuilding items from the journal, and checking that the live items match.

Each source is replayed on its own: its parsed deliveries in journal order,
folded by the same fold_delivery into a scratch copy in memory. `--check`
compares that copy with the live items. A rebuild applies the difference in one
transaction per source (create, update, delete), so items that did not change
keep their ids, and it does so only if no delivery of that source was folded
while the replay ran (else it replays that source again).

A source with a parsed delivery whose body was pruned cannot be rebuilt: its
live items are left as they are and the report names it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import BooleanField, ExpressionWrapper, Q

from fold_app.fold import MemoryItems, fold_delivery, state_of
from fold_app.models import Delivery, Item
from fold_app.normalize import JOURNAL_FIELDS, ItemState
from newsroom.sources.models import Source

_CHUNK = 200
_ATTEMPTS = 3


@dataclass
class SourceDiff:
    source_id: int
    label: str
    missing: list[str] = field(
        default_factory=list
    )  # keys the replay has, live does not
    extra: list[str] = field(default_factory=list)  # keys live has, the replay does not
    changed: dict[str, list[str]] = field(
        default_factory=dict
    )  # key -> differing fields

    def __bool__(self) -> bool:
        return bool(self.missing or self.extra or self.changed)

    def summary(self) -> str:
        fields = sorted({name for names in self.changed.values() for name in names})
        parts = [
            f"{len(self.missing)} missing",
            f"{len(self.extra)} extra",
            f"{len(self.changed)} changed"
            + (f" ({', '.join(fields)})" if fields else ""),
        ]
        return f"source {self.source_id} ({self.label}): " + ", ".join(parts)


@dataclass
class ReindexReport:
    sources: int = 0
    deliveries: int = 0
    created: int = 0
    updated: int = 0
    deleted: int = 0
    differing: list[SourceDiff] = field(default_factory=list)
    unrebuildable: list[tuple[int, str, int]] = field(
        default_factory=list
    )  # id, label, pruned
    busy: list[tuple[int, str]] = field(default_factory=list)


def journal_of(source_id: int) -> list[tuple[str, bool]]:
    """The source's parsed deliveries in journal order: (id, body is gone)."""
    pruned = ExpressionWrapper(Q(payload__isnull=True), output_field=BooleanField())
    rows = (
        Delivery.objects.filter(source_id=source_id, status=Delivery.Status.PARSED)
        .order_by("received_at", "id")
        .annotate(pruned=pruned)
        .values_list("id", "pruned")
    )
    return list(rows)


def replay(
    delivery_ids: list[str], tick: Callable[[], None] | None = None
) -> MemoryItems:
    """Fold the deliveries, in the order given, into a fresh scratch copy."""
    store = MemoryItems()
    for start in range(0, len(delivery_ids), _CHUNK):
        chunk = delivery_ids[start : start + _CHUNK]
        deliveries = Delivery.objects.select_related("payload").in_bulk(chunk)
        for delivery_id in chunk:
            fold_delivery(deliveries[delivery_id], store=store)
            if tick is not None:
                tick()
    return store


def live_items(source_id: int) -> dict[str, Item]:
    return {item.key: item for item in Item.objects.filter(source_id=source_id)}


def compare(
    source: Source, replayed: dict[str, ItemState], live: dict[str, ItemState]
) -> SourceDiff:
    diff = SourceDiff(source.pk, source.title or source.url)
    diff.missing = sorted(replayed.keys() - live.keys())
    diff.extra = sorted(live.keys() - replayed.keys())
    for key in replayed.keys() & live.keys():
        names = [
            n
            for n in JOURNAL_FIELDS
            if getattr(replayed[key], n) != getattr(live[key], n)
        ]
        if names:
            diff.changed[key] = names
    return diff


def reindex(
    *,
    check: bool,
    on_total: Callable[[int], None] | None = None,
    tick: Callable[[], None] | None = None,
) -> ReindexReport:
    """Replay every source; with check=False also make the live items equal the
    replay. `on_total` is told the number of deliveries to replay, `tick` is
    called after each one (a progress bar)."""
    report = ReindexReport()
    sources = list(Source.objects.order_by("pk"))
    journals = {source.pk: journal_of(source.pk) for source in sources}
    if on_total is not None:
        on_total(sum(len(j) for j in journals.values() if not any(p for _, p in j)))
    for source in sources:
        journal = journals[source.pk]
        pruned = sum(1 for _, gone in journal if gone)
        if pruned:
            report.unrebuildable.append((source.pk, source.title or source.url, pruned))
            continue
        report.sources += 1
        report.deliveries += len(journal)
        if check:
            store = replay([d for d, _ in journal], tick)
            live = {k: state_of(item) for k, item in live_items(source.pk).items()}
            diff = compare(source, store.items, live)
            if diff:
                report.differing.append(diff)
            continue
        _rebuild_source(source, journal, report, tick)
    return report


def _rebuild_source(source: Source, journal, report: ReindexReport, tick) -> None:
    ids = [d for d, _ in journal]
    for attempt in range(_ATTEMPTS):
        store = replay(ids, tick if attempt == 0 else None)
        with transaction.atomic():
            Source.objects.select_for_update().get(pk=source.pk)
            now_ids = [d for d, _ in journal_of(source.pk)]
            if now_ids != ids:
                ids = now_ids  # a fold landed meanwhile: replay again
                continue
            live = live_items(source.pk)
            diff = compare(
                source, store.items, {k: state_of(i) for k, i in live.items()}
            )
            if diff:
                report.differing.append(diff)
                _apply(source, diff, store.items, live, report)
            return
    report.busy.append((source.pk, source.title or source.url))


def _apply(source, diff: SourceDiff, replayed, live, report: ReindexReport) -> None:
    if diff.extra:
        Item.objects.filter(pk__in=[live[k].pk for k in diff.extra]).delete()
        report.deleted += len(diff.extra)
    new_rows = []
    for key in diff.missing:
        row = Item(source_id=source.pk, key=key, category_id=source.category_id)
        _copy(replayed[key], row)
        new_rows.append(row)
    Item.objects.bulk_create(new_rows, batch_size=500)
    report.created += len(new_rows)
    changed_rows = []
    for key in diff.changed:
        _copy(replayed[key], live[key])
        changed_rows.append(live[key])
    Item.objects.bulk_update(changed_rows, list(JOURNAL_FIELDS), batch_size=500)
    report.updated += len(changed_rows)


def _copy(state: ItemState, row: Item) -> None:
    for name in JOURNAL_FIELDS:
        setattr(row, name, getattr(state, name))
