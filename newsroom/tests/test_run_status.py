from __future__ import annotations

from newsroom.runs.status import LOG_LIMIT, RunStatus


def make_status() -> RunStatus:
    status = RunStatus(run_id=1, reader_id=7)
    status.add_source(10, "BBC World", "world")
    status.add_source(11, "Nature", "science")
    return status


def test_a_report_writes_state_count_and_log_line_in_one_change():
    status = make_status()
    change = status.report(10, "ok", message="BBC World: ok, 12 entries", count=12, ms=140)
    assert change["source"] == {"id": 10, "state": "ok", "ms": 140, "error": "", "count": 12}
    assert change["log"]["msg"] == "BBC World: ok, 12 entries"
    assert status.sources[10]["state"] == "ok"
    assert status.counts["ok"] == 1 and status.counts["queued"] == 1


def test_counts_follow_state_changes_incrementally():
    status = make_status()
    status.report(10, "fetching", message="fetching")
    status.report(10, "error", message="timeout", error="timed out")
    status.report(11, "not_modified", message="304")
    assert +status.counts == {"error": 1, "not_modified": 1}
    assert status.done_ids() == {10, 11}


def test_log_keeps_the_last_lines_only():
    status = make_status()
    for n in range(LOG_LIMIT + 50):
        status.note(f"line {n}")
    assert len(status.log) == LOG_LIMIT
    assert status.log[0]["msg"] == "line 50"


def test_replica_applies_changes_in_order_and_reports_gaps():
    origin = make_status()
    replica = RunStatus.from_json(origin.to_json(), 1, 7)
    first = origin.report(10, "ok", message="ok", count=3)
    second = origin.fold_outcome(10, items=3, new=2, category="world")
    third = origin.report(11, "error", message="boom", error="boom")
    assert replica.apply(first)
    assert replica.apply(first)  # seen already: ignored
    assert not replica.apply(third)  # gap: caller reloads the snapshot
    assert replica.apply(second) and replica.apply(third)
    assert replica.to_json() == origin.to_json()
    assert replica.items_by_category["world"] == 2


def test_snapshot_round_trip():
    status = make_status()
    status.report(10, "ok", message="ok", count=5, ms=20)
    status.set_model({"stage": "writing", "words": 120, "heading": "World"})
    copy = RunStatus.from_json(status.to_json(), 1, 7)
    assert copy.to_json() == status.to_json()
    assert copy.counts == status.counts
