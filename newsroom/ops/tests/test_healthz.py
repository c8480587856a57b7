"""GET /healthz: database, channel layer and heartbeats; 200 or 503 with reasons."""

from __future__ import annotations

import socket
from datetime import timedelta

import pytest
from django.utils import timezone

from newsroom.ops import heartbeat
from newsroom.ops.health import check_roles
from newsroom.ops.heartbeat import Heartbeats
from newsroom.ops.models import Heartbeat

pytestmark = pytest.mark.django_db


def test_all_healthy_is_200_with_every_check(operator_client, all_roles_beating):
    response = operator_client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok" and body["problems"] == []
    assert body["database"]["ok"] is True
    assert body["channel_layer"]["ok"] is True
    assert set(body["roles"]) == set(heartbeat.ROLES)
    for role in heartbeat.ROLES:
        (process,) = body["roles"][role]["processes"]
        assert process["state"] == "fresh"
        assert process["last_beat_age_s"] < 5


def test_a_stale_role_is_503_and_named(operator_client, all_roles_beating):
    Heartbeat.objects.filter(role="fold").update(
        last_beat_at=timezone.now() - timedelta(seconds=120)
    )
    response = operator_client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "fail"
    (problem,) = body["problems"]
    assert problem.startswith("fold: no fresh heartbeat")
    assert "testhost:" in problem and "(stale)" in problem
    assert body["roles"]["fold"]["processes"][0]["state"] == "stale"
    assert body["roles"]["web"]["ok"] is True


def test_a_stale_process_beside_a_fresh_one_of_its_role_is_shown_but_healthy(
    operator_client, all_roles_beating
):
    old = Heartbeats(process="deadhost:9")
    old.add("runs")
    old.beat()
    Heartbeat.objects.filter(process="deadhost:9").update(
        last_beat_at=timezone.now() - timedelta(hours=1)
    )
    response = operator_client.get("/healthz")
    assert response.status_code == 200
    states = {
        p["process"]: p["state"] for p in response.json()["roles"]["runs"]["processes"]
    }
    assert states["deadhost:9"] == "stale"


def test_a_role_that_never_beat_is_503(operator_client, all_roles_beating):
    Heartbeat.objects.filter(role="reaper").delete()
    response = operator_client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["problems"] == [
        "reaper: no process has ever sent a heartbeat"
    ]


def test_roles_left_out_of_the_required_list_are_not_required(
    operator_client, all_roles_beating, settings
):
    settings.NEWSROOM_HEALTH_ROLES = ["web", "runs", "fold"]
    Heartbeat.objects.filter(role="reaper").delete()
    assert operator_client.get("/healthz").status_code == 200


def test_a_role_whose_processes_all_stopped_is_503(operator_client, all_roles_beating):
    all_roles_beating[1].stop()  # the runs process exited cleanly
    response = operator_client.get("/healthz")
    assert response.status_code == 503
    assert "(stopped)" in response.json()["problems"][0]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_channel_layer_is_503(
    operator_client, all_roles_beating, settings
):
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [f"redis://127.0.0.1:{_closed_port()}/0"]},
        }
    }
    response = operator_client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["channel_layer"]["ok"] is False
    assert body["channel_layer"]["backend"] == "RedisChannelLayer"
    assert body["problems"][0].startswith("channel layer")
    assert body["database"]["ok"] is True


def test_check_roles_with_a_clock_sees_staleness_come_and_go(clock):
    hb = Heartbeats(process="h:1", clock=clock)
    hb.add("fold")
    hb.beat()
    stale_after = timedelta(seconds=45)
    rows = list(Heartbeat.objects.all())
    roles, problems = check_roles(rows, ["fold"], clock.now, stale_after)
    assert roles["fold"]["ok"] and problems == []
    clock.advance(46)
    roles, problems = check_roles(rows, ["fold"], clock.now, stale_after)
    assert not roles["fold"]["ok"]
    assert problems == [
        "fold: no fresh heartbeat; the last one came 46 s ago from h:1 (stale)"
    ]
