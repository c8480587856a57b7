"""Fault: the process running a run is killed with SIGKILL, at random moments.

Real processes (`manage.py run_worker`) on the test database, feeds from a local
server that counts what is asked of it. Each time, the next process must find
the run interrupted; resumed, it fetches only what the saved state lacks.
"""

from __future__ import annotations

import pytest

from newsroom.tests.faultkit import is_postgres
from newsroom.tests.scenarios import kill_the_run_worker

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
    pytest.mark.skipif(
        not is_postgres(),
        reason="fault tests kill real processes sharing one database: "
        "they run on the PostgreSQL + Redis configuration",
    ),
]


def test_a_killed_run_worker_loses_at_most_a_second_and_resumes(make_reader, tmp_path):
    reader = make_reader("alice")
    result = kill_the_run_worker(reader, count=120, kills=2, tmp=tmp_path, seed=7)

    assert result.kills == 2
    assert result.final_state == "done"
    assert result.sources_done == 120
    # Nothing the saved state had was fetched again.
    assert result.refetched_saved == [0, 0]
    # Every feed was fetched, some again: only those the saved state lacked
    # (in flight at the kill, or answered since its last save). How many seconds
    # of answers that was is a timing figure, reported by bench/faults.py
    # (run_lost_s_max); the once-a-second cadence is proved with a fake clock
    # in test_saver.py.
    assert result.requests >= 120
    assert result.requests - 120 <= sum(result.at_risk)
