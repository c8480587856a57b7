"""Folding one delivery into items: the one function the worker, reindex and
tests all call.

A live fold is one transaction: the items it writes and the delivery's outcome
commit together or not at all, so a killed process never leaves a delivery
marked parsed with half its items. The outcome write is conditional on the
delivery still being queued, so two folds of the same delivery (a fold given up
at its deadline, a second worker) cannot both count: the loser rolls back.

Source health: the fetcher owns the fetch facts (status, ETag, last success,
next attempt). A fold only writes `last_status`, `last_error` and `error_count`,
and only when the delivery is the newest of its source, so an old delivery
folded late cannot overwrite what a newer fetch reported. A parse failure sets
`last_status = "unparsable"`; a later good fold clears only that marker.
"""

from __future__ import annotations

import logging
import weakref
from dataclasses import dataclass, field

from django.db import DEFAULT_DB_ALIAS, connection, connections, transaction
from django.db.models import F, Q
from django.utils import timezone

from fold_app.deadline import Deadline
from fold_app.models import Delivery, DeliveryBody, Item
from fold_app.normalize import (
    JOURNAL_FIELDS,
    ItemState,
    Version,
    best_per_key,
    merge,
    normalize,
)
from fold_app.parsing import parse_body
from fold_app.signals import delivery_folded
from newsroom.sources.models import Source

log = logging.getLogger(__name__)

QUEUED = (Delivery.Status.PENDING, Delivery.Status.DEFERRED)
UNPARSABLE = "unparsable"
# How long a fold waits for a row another transaction holds before it counts
# as "database busy" (deferred), like SQLite's busy timeout.
LOCK_TIMEOUT_MS = 20_000
_DEADLINE_EVERY = 25  # entries between deadline checks while normalising


@dataclass
class FoldResult:
    """status: parsed, failed, or skipped (already folded elsewhere).
    items: distinct entries folded; new_items: of those, items not seen before."""

    status: str
    items: int = 0
    new_items: int = 0
    error: str = ""
    notes: list[str] = field(default_factory=list)


class _AlreadyFolded(Exception):
    pass


class MemoryItems:
    """A scratch copy of one source's items, for replays that must not touch the
    live table (reindex --check) or that apply their result afterwards."""

    def __init__(self) -> None:
        self.items: dict[str, ItemState] = {}

    def load(self, keys) -> dict[str, ItemState]:
        return {k: self.items[k] for k in keys if k in self.items}

    def save(self, states: list[ItemState], created: set[str]) -> None:
        for state in states:
            self.items[state.key] = state


def load_delivery(delivery_id: str) -> Delivery:
    """The delivery with its source and body, as
    `select_related("source", "payload").get(pk=...)` gives them, from one plain
    SELECT. The worker loads every delivery this way, and the ORM spends longer
    building and compiling that query than the database spends answering it."""
    wrapper = connections[DEFAULT_DB_ALIAS]
    loader = _loaders.get(wrapper)
    if loader is None:
        loader = _loaders[wrapper] = _DeliveryLoader(wrapper)
    return loader.load(delivery_id)


class _DeliveryLoader:
    """The SELECT, the columns and the backend's value converters (SQLite gives
    datetimes as text), worked out once per connection from the models, exactly
    as the ORM's compiler works them out for a query."""

    def __init__(self, wrapper) -> None:
        self.wrapper = weakref.proxy(wrapper)
        q = wrapper.ops.quote_name
        fk = Delivery._meta.get_field("source")
        self.source_field = fk
        self.payload_rel = Delivery._meta.get_field("payload")
        d, s, b = (
            Delivery._meta.db_table,
            Source._meta.db_table,
            DeliveryBody._meta.db_table,
        )
        groups = (
            (d, Delivery._meta.concrete_fields),
            (s, Source._meta.concrete_fields),
            (b, [DeliveryBody._meta.get_field("body")]),
        )
        self.names = [[f.attname for f in fields] for _, fields in groups]
        self.split = len(groups[0][1]), len(groups[0][1]) + len(groups[1][1])
        columns = [(t, f) for t, fields in groups for f in fields]
        self.sql = (
            f"SELECT {', '.join(f'{q(t)}.{q(f.column)}' for t, f in columns)} "
            f"FROM {q(d)} INNER JOIN {q(s)} ON {q(d)}.{q(fk.column)} = {q(s)}.{q('id')} "
            f"LEFT OUTER JOIN {q(b)} ON {q(b)}.{q('delivery_id')} = {q(d)}.{q('id')} "
            f"WHERE {q(d)}.{q('id')} = %s"
        )
        self.converters = []
        for index, (table, f) in enumerate(columns):
            col = f.get_col(table)
            found = wrapper.ops.get_db_converters(col) + f.get_db_converters(wrapper)
            if found:
                self.converters.append((index, col, found))

    def load(self, delivery_id: str) -> Delivery:
        wrapper = self.wrapper
        with wrapper.cursor() as cursor:
            cursor.execute(self.sql, [delivery_id])
            row = cursor.fetchone()
        if row is None:
            raise Delivery.DoesNotExist("Delivery matching query does not exist.")
        row = list(row)
        for index, col, converters in self.converters:
            value = row[index]
            for convert in converters:
                value = convert(value, col, wrapper)
            row[index] = value
        db = wrapper.alias
        first, second = self.split
        delivery = Delivery.from_db(db, self.names[0], row[:first])
        source = Source.from_db(db, self.names[1], row[first:second])
        self.source_field.set_cached_value(delivery, source)
        payload = None
        if row[second] is not None:
            payload = DeliveryBody.from_db(
                db, ["delivery_id", *self.names[2]], [delivery.pk, *row[second:]]
            )
        self.payload_rel.set_cached_value(delivery, payload)
        return delivery


# Per connection object (one per thread), dropped with it.
_loaders: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def read_delivery(
    delivery: Delivery, deadline: Deadline | None = None
) -> tuple[list[Version], str, list[str]]:
    """Parse and normalise a delivery's body: (versions, error, notes). Pure
    work outside any transaction, so the write lock is held only for writes."""
    body = delivery.body
    body = bytes(body) if body is not None else None
    parsed = parse_body(body, delivery.content_type, delivery.kind, delivery.url)
    if deadline:
        deadline.check()
    if parsed.error:
        return [], parsed.error, parsed.notes
    versions = []
    skipped = 0
    for index, raw in enumerate(parsed.entries):
        if deadline and index % _DEADLINE_EVERY == _DEADLINE_EVERY - 1:
            deadline.check()
        version = normalize(raw)
        if version is None:
            skipped += 1
        else:
            versions.append(version)
    if not versions and parsed.broken:
        return [], f"This feed cannot be read: {parsed.broken}.", []
    notes = list(parsed.notes)
    if skipped:
        notes.append(
            f"{skipped} entries had no id, link, title or text and were skipped."
        )
    if not versions and parsed.entries:
        notes.append("No entry had anything to show.")
    return versions, "", notes


def fold_into(store, versions: list[Version], delivery: Delivery) -> tuple[int, int]:
    """Merge a delivery's versions into a store; returns (items, new_items)."""
    best = best_per_key(versions)
    current = store.load(best.keys())
    changed: list[ItemState] = []
    created: set[str] = set()
    for key, version in best.items():
        state = merge(current.get(key), version, delivery.received_at, delivery.id)
        if state is None:
            continue
        changed.append(state)
        if key not in current:
            created.add(key)
    store.save(changed, created)
    return len(best), len(created)


def fold_delivery(
    delivery: Delivery,
    *,
    store: MemoryItems | None = None,
    deadline: Deadline | None = None,
) -> FoldResult:
    """Fold one delivery.

    Live (no store): items, the delivery's outcome and the source's parse health
    are written in one transaction, and `delivery_folded` is sent after it
    commits. A delivery no longer queued is left alone (status "skipped").
    Replay (a store): the versions are merged into the store and nothing in the
    journal or the items table changes.
    Database errors propagate: the worker decides whether they defer or fail.
    """
    if store is None and delivery.status not in QUEUED:
        return FoldResult(status="skipped")
    versions, error, notes = read_delivery(delivery, deadline)
    if store is not None:
        if error:
            return FoldResult(status=Delivery.Status.FAILED, error=error, notes=notes)
        items, new_items = fold_into(store, versions, delivery)
        return FoldResult(Delivery.Status.PARSED, items, new_items, notes=notes)
    try:
        return _fold_live(delivery, versions, error, notes, deadline)
    except _AlreadyFolded:
        return FoldResult(status="skipped")


def _fold_live(delivery, versions, error, notes, deadline) -> FoldResult:
    with transaction.atomic():
        _limit_statements(deadline)
        source = _lock_source(delivery)
        if error:
            result = FoldResult(Delivery.Status.FAILED, error=error, notes=notes)
        else:
            items, new_items = fold_into(DatabaseItems(source), versions, delivery)
            result = FoldResult(Delivery.Status.PARSED, items, new_items, notes=notes)
        _record_outcome(delivery, result)
        _record_source_health(source, delivery, result.error)
        if deadline:
            deadline.check()  # the last point before commit
    return result


def _lock_source(delivery: Delivery) -> Source:
    # The source row is the lock that orders folds and reindex of one source on
    # PostgreSQL. SQLite needs none: IMMEDIATE transactions take the one write
    # lock at BEGIN, and the source loaded with the delivery is current enough:
    # of its fields a fold reads only the category and its own parse marker.
    if connection.vendor == "sqlite" and "source" in delivery._state.fields_cache:
        return delivery.source
    return Source.objects.select_for_update().get(pk=delivery.source_id)


def _limit_statements(deadline: Deadline | None) -> None:
    # PostgreSQL can enforce the deadline itself: a statement still running when
    # the budget ends is cancelled, and a lock wait past LOCK_TIMEOUT_MS raises
    # instead of hanging. SQLite has its busy timeout for the latter.
    if connection.vendor != "postgresql":
        return
    statement_ms = max(1, int(deadline.remaining() * 1000)) if deadline else 0
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT set_config('statement_timeout', %s, true), set_config('lock_timeout', %s, true)",
            [f"{statement_ms}ms", f"{LOCK_TIMEOUT_MS}ms"],
        )


def _record_outcome(delivery: Delivery, result: FoldResult) -> None:
    message = result.error or " ".join(result.notes)
    now = timezone.now()
    # Plain SQL: this runs once per delivery and the ORM's query building costs
    # more than the update. Conditional on still being queued (see module doc).
    ops = connection.ops
    table, q = ops.quote_name(Delivery._meta.db_table), ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET {q('status')} = %s, {q('parse_error')} = %s, "
            f"{q('folded_at')} = %s, {q('items_count')} = %s, "
            f"{q('new_items_count')} = %s "
            f"WHERE {q('id')} = %s AND {q('status')} IN (%s, %s)",
            [
                str(result.status),
                message,
                ops.adapt_datetimefield_value(now),
                result.items,
                result.new_items,
                delivery.pk,
                *map(str, QUEUED),
            ],
        )
        updated = cursor.rowcount
    if updated != 1:
        raise _AlreadyFolded(delivery.pk)
    delivery.status, delivery.parse_error, delivery.folded_at = (
        result.status,
        message,
        now,
    )
    delivery.items_count, delivery.new_items_count = result.items, result.new_items
    transaction.on_commit(
        lambda: send_folded(delivery, result.items, result.new_items), robust=True
    )


def send_folded(delivery: Delivery, items: int, new_items: int) -> None:
    for receiver, response in delivery_folded.send_robust(
        sender=Delivery, delivery=delivery, items=items, new_items=new_items
    ):
        if isinstance(response, Exception):
            log.error(
                "delivery_folded receiver %r failed for %s: %s",
                receiver,
                delivery.pk,
                response,
                exc_info=response,
            )


def _is_newest(delivery: Delivery) -> bool:
    return (
        not Delivery.objects.filter(source_id=delivery.source_id)
        .filter(
            Q(received_at__gt=delivery.received_at)
            | Q(received_at=delivery.received_at, id__gt=delivery.id)
        )
        .exists()
    )


def _record_source_health(source: Source, delivery: Delivery, error: str) -> None:
    if not error and source.last_status != UNPARSABLE:
        return  # the common case costs no query
    if not _is_newest(delivery):
        return
    if error:
        Source.objects.filter(pk=source.pk).update(
            last_status=UNPARSABLE,
            last_error=f"The last fetch could not be read: {error}",
            error_count=F("error_count") + 1,
        )
    else:
        Source.objects.filter(pk=source.pk, last_status=UNPARSABLE).update(
            last_status="ok", last_error="", error_count=0
        )


def record_failure(delivery_id: str, error: str) -> bool:
    """Mark a queued delivery failed from outside its fold (deadline passed, an
    unexpected error). False if it was no longer queued. The source's health is
    written in a second, best-effort transaction: the failure must not wait on a
    source row a stuck fold may still hold."""
    now = timezone.now()
    with transaction.atomic():
        updated = Delivery.objects.filter(pk=delivery_id, status__in=QUEUED).update(
            status=Delivery.Status.FAILED,
            parse_error=error,
            folded_at=now,
            items_count=0,
            new_items_count=0,
        )
    if not updated:
        return False
    delivery = Delivery.objects.get(pk=delivery_id)
    try:
        with transaction.atomic():
            _limit_statements(None)
            source = Source.objects.get(pk=delivery.source_id)
            _record_source_health(source, delivery, error)
    except Exception:  # noqa: BLE001 - health is a courtesy; the outcome is recorded
        log.warning(
            "could not note the failure of %s on its source", delivery_id, exc_info=True
        )
    send_folded(delivery, 0, 0)
    return True


def mark_deferred(delivery_id: str) -> None:
    """Best effort: the database that deferred the fold may refuse this too, and
    the delivery stays queued either way."""
    try:
        Delivery.objects.filter(pk=delivery_id, status=Delivery.Status.PENDING).update(
            status=Delivery.Status.DEFERRED
        )
    except Exception:  # noqa: BLE001
        log.debug("could not mark %s deferred", delivery_id, exc_info=True)


class DatabaseItems:
    """One source's rows in the items table, read and written in bulk: one query
    loads the keys a delivery touches, one executemany inserts, one updates.
    Plain tuples, not model instances: preparing every field of every row
    through the ORM costs more than the statements themselves."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self._ids: dict[str, int] = {}

    def load(self, keys) -> dict[str, ItemState]:
        keys = list(keys)
        if not keys:
            return {}
        ops = connection.ops
        columns = ("id", "key", *JOURNAL_FIELDS)
        sql = (
            f"SELECT {', '.join(map(ops.quote_name, columns))} "
            f"FROM {ops.quote_name(Item._meta.db_table)} "
            f"WHERE {ops.quote_name('source_id')} = %s "
            f"AND {ops.quote_name('key')} IN ({', '.join(['%s'] * len(keys))})"
        )
        # SQLite hands datetimes back as text; the backend's own converter makes
        # them the aware datetimes the ORM would give (PostgreSQL needs none).
        convert = getattr(ops, "convert_datetimefield_value", None)
        with connection.cursor() as cursor:
            cursor.execute(sql, [self.source.pk, *keys])
            rows = cursor.fetchall()
        states = {}
        for pk, key, *values in rows:
            if convert is not None:
                values = [
                    convert(v, None, connection) if n in _DATETIME_FIELDS else v
                    for n, v in zip(JOURNAL_FIELDS, values, strict=True)
                ]
            self._ids[key] = pk
            states[key] = ItemState(key, *values)
        return states

    def save(self, states: list[ItemState], created: set[str]) -> None:
        ops = connection.ops
        table = ops.quote_name(Item._meta.db_table)
        when = _Adapter(ops.adapt_datetimefield_value)
        new_rows, changed_rows = [], []
        for state in states:
            values = (
                state.guid,
                state.url,
                state.title,
                state.author,
                when(state.published),
                state.html,
                state.text,
                state.completeness,
                state.delivery_id,
                when(state.updated_at),
                when(state.first_seen_at),
            )  # in JOURNAL_FIELDS order
            if state.key in created:
                new_rows.append(
                    (self.source.pk, state.key, self.source.category_id, *values)
                )
            else:
                changed_rows.append((*values, self._ids[state.key]))
        with connection.cursor() as cursor:
            if new_rows:
                columns = ("source_id", "key", "category_id", *JOURNAL_FIELDS)
                cursor.executemany(
                    f"INSERT INTO {table} ({', '.join(map(ops.quote_name, columns))}) "
                    f"VALUES ({', '.join(['%s'] * len(columns))})",
                    new_rows,
                )
            if changed_rows:
                assignments = ", ".join(
                    f"{ops.quote_name(c)} = %s" for c in JOURNAL_FIELDS
                )
                cursor.executemany(
                    f"UPDATE {table} SET {assignments} WHERE {ops.quote_name('id')} = %s",
                    changed_rows,
                )


class _Adapter(dict):
    """The backend's datetime adaptation, once per distinct value: every row of
    a delivery carries its received_at twice, and feeds repeat their dates."""

    def __init__(self, adapt) -> None:
        self.adapt = adapt

    def __missing__(self, value):
        adapted = self[value] = self.adapt(value)
        return adapted

    def __call__(self, value):
        return None if value is None else self[value]


_DATETIME_FIELDS = frozenset({"published", "updated_at", "first_seen_at"})


def state_of(item: Item) -> ItemState:
    return ItemState(item.key, *(getattr(item, name) for name in JOURNAL_FIELDS))
