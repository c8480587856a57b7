"""Run pages: Run now, resume, schedule, and each reader sees only their own runs."""

from __future__ import annotations

import re
from datetime import time

import pytest
from django.test import Client
from django.urls import reverse

from newsroom.runs.models import Run, RunSchedule
from newsroom.runs.status import RunStatus

pytestmark = pytest.mark.django_db


def _finished_run(reader) -> Run:
    run = Run.objects.create(reader=reader, state="done")
    status = RunStatus(run.pk, reader.pk, "running")
    status.add_source(1, "Good feed", "World")
    status.add_source(2, "Broken feed")
    status.report(1, "ok", message="Good feed: ok, 12 KB", ms=120)
    status.report(
        2,
        "error",
        message="Broken feed: HTTP 404 Not Found",
        error="HTTP 404 Not Found",
    )
    status.set_run_state(
        "done", "Run finished in 0.4 s: 1 ok, 0 not modified, 1 failed"
    )
    run.status = status.to_json()
    run.save()
    return run


def test_run_now_queues_a_run_and_shows_it(alice_client, alice):
    response = alice_client.post(reverse("run_now"))
    run = Run.objects.get(reader=alice)
    assert (
        response.status_code == 302 and response["Location"] == run.get_absolute_url()
    )
    assert run.state == "queued" and run.trigger == "manual"


def test_run_now_twice_points_at_the_active_run(alice_client, alice):
    alice_client.post(reverse("run_now"))
    response = alice_client.post(reverse("run_now"), follow=True)
    assert Run.objects.filter(reader=alice).count() == 1
    assert b"already going" in response.content


def test_run_now_needs_post_and_csrf(alice):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    assert client.get(reverse("run_now")).status_code == 405
    assert client.post(reverse("run_now")).status_code == 403
    assert not Run.objects.exists()


def test_dashboard_and_runs_page_have_the_button(alice_client):
    for name in ("dashboard", "run_list"):
        content = alice_client.get(reverse(name)).content.decode()
        assert (
            f'action="{reverse("run_now")}"' in content
            and "csrfmiddlewaretoken" in content
        )


def test_run_detail_shows_sources_counts_and_log(alice_client, alice):
    run = _finished_run(alice)
    content = alice_client.get(run.get_absolute_url()).content.decode()
    assert "Good feed" in content and "120 ms" in content
    assert "HTTP 404 Not Found" in content
    assert "1 ok" in content and "1 failed" in content
    assert "Run finished in 0.4 s" in content


def test_another_readers_run_is_404(client, alice, bob):
    run = _finished_run(alice)
    run.state = "interrupted"
    run.save()
    client.force_login(bob)
    assert client.get(run.get_absolute_url()).status_code == 404
    assert client.post(reverse("run_resume", args=[run.pk])).status_code == 404
    assert b"#%d" % run.pk not in client.get(reverse("run_list")).content
    run.refresh_from_db()
    assert run.state == "interrupted"


def test_run_list_shows_own_runs(alice_client, alice, bob):
    mine = _finished_run(alice)
    _finished_run(bob)
    content = alice_client.get(reverse("run_list")).content.decode()
    assert f"#{mine.pk}" in content
    assert len(re.findall(r'href="/runs/\d+/"', content)) == 1


def test_resume_button_requeues_an_interrupted_run(alice_client, alice):
    run = Run.objects.create(reader=alice, state="interrupted")
    assert b"Resume" in alice_client.get(run.get_absolute_url()).content
    alice_client.post(reverse("run_resume", args=[run.pk]))
    run.refresh_from_db()
    assert run.state == "queued"


def test_the_daily_time_is_set_and_cleared(alice_client, alice):
    response = alice_client.post(reverse("run_schedule"), {"run_at": "06:30"})
    assert response.status_code == 302
    assert RunSchedule.objects.get(reader=alice).run_at == time(6, 30)
    alice_client.post(reverse("run_schedule"), {"run_at": ""})
    assert RunSchedule.objects.get(reader=alice).run_at is None


def test_a_bad_time_is_refused_with_a_message(alice_client, alice):
    response = alice_client.post(reverse("run_schedule"), {"run_at": "25:99"})
    assert response.status_code == 400
    assert b"valid time" in response.content
