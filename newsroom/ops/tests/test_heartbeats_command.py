from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from newsroom.ops.heartbeat import Heartbeats
from newsroom.ops.models import Heartbeat

pytestmark = pytest.mark.django_db


def test_it_lists_states_and_forgets_only_dead_processes_when_asked():
    for process in ("live:1", "dead:2", "gone:3"):
        hb = Heartbeats(process=process)
        hb.add("fold")
        hb.beat()
        if process == "gone:3":
            hb.stop()
    Heartbeat.objects.filter(process="dead:2").update(
        last_beat_at=timezone.now() - timedelta(minutes=10)
    )
    out = StringIO()
    call_command("heartbeats", stdout=out)
    text = out.getvalue()
    assert "live:1" in text and "fresh" in text
    assert "stale" in text and "stopped" in text
    assert Heartbeat.objects.count() == 3  # listing deletes nothing

    call_command("heartbeats", "--forget", stdout=out)
    assert list(Heartbeat.objects.values_list("process", flat=True)) == ["live:1"]
    assert "Forgot 2" in out.getvalue()
