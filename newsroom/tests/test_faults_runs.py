"""Fault: the process running a run is killed with SIGKILL, at random moments.

Real processes (`manage.py run_worker`) on the test database, feeds from a local
server that counts what is asked of it. Each time, the next process must find
the run interrupted; resumed, it fetches only what the saved state lacks, and
the saved state lacks at most about a second of work.
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
    # What it lacked was at most the last second or so of answers: the saver
    # writes once a second; the margin covers journaling the last answers and a
    # loaded machine (bench/faults.py reports the figure).
    assert max(result.lost_s) <= 2.5, result.lost_s
    # Every feed was fetched, some again: those whose answers were lost.
    assert result.requests >= 120
    assert result.requests - 120 <= sum(result.at_risk)
