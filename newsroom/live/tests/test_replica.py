from __future__ import annotations

from collections import Counter

from newsroom.live.cells import capture
from newsroom.live.replica import RunReplica
from newsroom.runs.status import RunStatus


def origin_and_replica(n: int = 6) -> tuple[RunStatus, RunReplica]:
    origin = RunStatus(1, 7, "running")
    for i in range(n):
        origin.add_source(i, f"S{i}", "World" if i % 2 else "Science")
    return origin, RunReplica(RunStatus.from_json(origin.to_json(), 1, 7))


def test_a_report_touches_its_row_the_totals_its_category_and_the_log_only():
    origin, replica = origin_and_replica()
    before = {c: c.version for c in replica.cells()}
    replica.apply(origin.report(3, "ok", message="S3: 4 items", count=4, ms=20))
    moved = {c.name for c in replica.cells() if c.version != before[c]}
    assert moved == {"run1.src3", "run1.totals", "run1.cat:World", "run1.log"}


def test_a_count_update_without_a_state_change_touches_the_row_alone():
    origin, replica = origin_and_replica()
    replica.apply(origin.report(3, "ok", message="ok", count=4))
    before = {c: c.version for c in replica.cells()}
    replica.apply(origin.fold_outcome(3, items=4, new=2))
    moved = {c.name for c in replica.cells() if c.version != before[c]}
    assert moved == {"run1.src3", "run1.totals"}


def test_model_progress_touches_the_model_cell():
    origin, replica = origin_and_replica()
    row_reads = capture(lambda: replica.source_cell(1).get())[1]
    replica.apply(origin.set_model({"stage": "writing", "words": 120}))
    assert row_reads.valid()
    assert replica.status.model == {"stage": "writing", "words": 120}


def test_category_counts_follow_the_changes_and_match_a_recount():
    origin, replica = origin_and_replica(40)
    states = ["fetching", "ok", "error", "not_modified"]
    for n in range(200):
        replica.apply(origin.report(n % 40, states[n % 4], message="m"))
    recount: dict[str, Counter] = {}
    for entry in replica.status.sources.values():
        recount.setdefault(entry["category"], Counter())[entry["state"]] += 1
    assert {k: +v for k, v in replica.category_counts.items()} == recount
    assert +replica.status.counts == sum(recount.values(), Counter())


def test_a_gap_is_refused_and_an_old_change_ignored():
    origin, replica = origin_and_replica()
    first = origin.note("one")
    second = origin.note("two")
    assert replica.apply(second) is False
    assert replica.apply(first) is True
    assert replica.apply(first) is True
    assert replica.apply(second) is True
    assert [line["msg"] for line in replica.status.log][-2:] == ["one", "two"]


def test_adding_a_source_changes_the_structure_and_layout():
    origin, replica = origin_and_replica(2)
    structure = replica.structure.version
    replica.apply(origin.add_source(9, "Alpha", "Arts"))
    assert replica.structure.version == structure + 1
    assert [name for name, _ in replica.layout()] == ["Arts", "Science", "World"]


def test_loading_a_snapshot_touches_every_cell():
    origin, replica = origin_and_replica()
    for i in range(3):
        origin.report(i, "ok", message="ok", count=1)
    reads = capture(lambda: [c.get() for c in replica.cells()])[1]
    replica.load(RunStatus.from_json(origin.to_json(), 1, 7))
    assert not reads.valid()
    assert replica.category_counts["Science"]["ok"] == 2


def test_categories_follow_the_readers_order_then_names_uncategorised_last():
    origin = RunStatus(1, 7)
    for sid, category in enumerate(["Arts", "World", "", "Science", "Zoology"]):
        origin.add_source(sid, f"S{sid}", category)
    replica = RunReplica(RunStatus.from_json(origin.to_json(), 1, 7), ["World", "Science"])
    assert [name for name, _ in replica.layout()] == [
        "World", "Science", "Arts", "Zoology", "Uncategorised",
    ]
