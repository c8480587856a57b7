"""Fault: PostgreSQL refuses connections (and cuts the open ones) for a while.

A run_worker and two fold_workers reach the database through a proxy the test
controls. Mid-run it refuses every connection for a few seconds. The workers
log, wait and continue: the run completes, every fetched body is journaled and
folded exactly once, and `reindex --check` passes.
"""

from __future__ import annotations

import pytest

from newsroom.tests.faultkit import is_postgres
from newsroom.tests.scenarios import database_outage

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
    pytest.mark.skipif(
        not is_postgres(), reason="the database outage is a PostgreSQL fault"
    ),
]


def test_workers_ride_out_postgresql_refusing_connections(make_reader, tmp_path):
    reader = make_reader("alice")
    result = database_outage(reader, sources=60, outage_s=3.0, tmp=tmp_path)

    assert result.refused > 0  # the outage was felt
    assert 0 < result.outage_at_done < 60
    assert result.workers_alive, result.logged[-10:]
    assert result.final_state == "done", result.logged[-10:]
    assert result.sources_done == 60
    assert result.sources_without_delivery == 0
    assert set(result.deliveries) <= {"parsed", "failed"}
    assert result.reindex_ok, result.reindex_output
    # They said what happened: once when it started, once when it ended (per
    # worker, its heartbeat, and per run for the run's own writes), with no
    # traceback; not once per failed attempt.
    assert result.logged, "nothing was logged about the outage"
    assert result.tracebacks == 0, result.logged
    said = {role: n for role, n in result.outages_said.items() if n}
    assert said, result.logged
    assert result.backs_said == result.outages_said, result.logged
    assert all(n <= 3 for n in said.values()), result.logged
