"""Faults under watching viewers: a daphne process killed, Redis restarted.

Real `serve` processes (two), a real `run_worker`, real WebSocket viewers that
behave like live.js (ack, apply by id, reconnect with jittered backoff asking
for the whole region). At the end every viewer shows what the database holds.
"""

from __future__ import annotations

import time

import pytest
from django.conf import settings

from newsroom.tests.faultkit import OwnRedis, is_postgres
from newsroom.tests.scenarios import watch_a_run_through_a_fault

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
    pytest.mark.skipif(
        not (is_postgres() and settings.REDIS_URL),
        reason="several daphne processes need PostgreSQL and the Redis channel layer",
    ),
]


def test_viewers_of_a_killed_daphne_reconnect_and_end_with_the_database(
    make_reader, tmp_path
):
    reader = make_reader("alice")
    result = watch_a_run_through_a_fault(
        reader, sources=60, viewers=50, fault="kill_daphne", tmp=tmp_path
    )

    assert result.final_state == "done"
    # The kill came mid-run.
    assert 0 < result.fault_at_done < 60
    assert result.matching == 50, result.mismatches
    # Half the viewers were on the killed process; each came back once at least
    # and began again with the whole region.
    assert result.reconnected_viewers >= 25
    assert result.first_frames_full


def test_a_run_survives_a_redis_restart_and_its_viewers_recover(make_reader, tmp_path):
    reader = make_reader("alice")
    redis = OwnRedis().start()  # our own: the machine's shared Redis is never touched

    def restart() -> None:
        redis.stop()
        time.sleep(1.5)  # Redis is down for a moment; the processes must ride it out
        redis.start()

    try:
        result = watch_a_run_through_a_fault(
            reader,
            sources=60,
            viewers=20,
            fault="restart_redis",
            tmp=tmp_path,
            redis_url=redis.url,
            restart_redis=restart,
            per_host=2,
        )
    finally:
        redis.stop()
    assert result.final_state == "done"
    assert 0 < result.fault_at_done < 60
    assert result.matching == 20, result.mismatches
