"""Fault: two fold workers share a backlog; one of them is SIGKILLed again and again.

Real `manage.py fold_worker` processes on the test database. Every delivery
ends parsed or failed, reported folded once, each source folded in journal
order, both workers did work, and `reindex --check` passes.
(bench/faults.py runs the full size: 5,000 deliveries, 10 kills.)
"""

from __future__ import annotations

import pytest

from newsroom.tests.faultkit import is_postgres
from newsroom.tests.scenarios import kill_fold_workers

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
    pytest.mark.skipif(
        not is_postgres(),
        reason="two fold workers at once need PostgreSQL (SQLite runs one)",
    ),
]


def test_two_fold_workers_killed_ten_times_fold_each_delivery_once(
    make_reader, tmp_path
):
    reader = make_reader("alice")
    result = kill_fold_workers(reader, count=1200, kills=10, tmp=tmp_path)

    assert result.kills == 10
    assert set(result.statuses) <= {"parsed", "failed"}
    assert sum(result.statuses.values()) == 1200
    assert result.statuses["failed"] == len(range(0, 1200, 97))
    assert result.folded_twice == []
    assert result.out_of_order_sources == []
    assert sum(1 for n in result.per_worker if n > 0) >= 2
    assert result.reindex_ok, result.reindex_output
