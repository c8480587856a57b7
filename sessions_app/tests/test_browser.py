"""With a real Chromium (one for the module) against pages on a local server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync

from newsroom.sources.models import Source
from sessions_app.models import BrowserSession
from sessions_app.pool import get_pool
from sessions_app.reaper import Reaper
from sessions_app.registry import SessionError
from sessions_app.render import render
from sessions_app.secrets import set_secret
from sessions_app.sessions import Sessions

pytestmark = [pytest.mark.browser, pytest.mark.django_db]
ROOT = Path(__file__).resolve().parents[2]


def unknown_memory() -> None:
    return None


def test_a_page_written_by_javascript_is_scraped(host, site, alice):
    outcome = Sessions(available=unknown_memory).scrape(
        alice, site.url("/js"), keep=False
    )
    assert outcome.title == "Written by script"
    assert '<a href="/story/1">First story</a>' in outcome.html
    # Not kept: a record to reopen from, no page.
    assert outcome.session.state == BrowserSession.State.NOT_OPENED


def test_a_browser_source_renders_with_the_readers_session_cookies(host, site, alice):
    source = Source.objects.create(
        reader=alice, kind="browser", url=site.url("/members")
    )
    before = async_to_sync(render)(source)
    assert "log in first" in before.html
    # The reader logs in inside a kept page; the source's render carries the cookie.
    Sessions(available=unknown_memory).scrape(alice, site.url("/login"), keep=True)
    after = async_to_sync(render)(source)
    assert 'href="/secret-story"' in after.html
    assert after.url == site.url("/members")


def test_a_kept_page_survives_between_requests_and_a_click_changes_it(
    host, site, alice_client
):
    opened = alice_client.post(
        "/sessions/api/open",
        json.dumps({"url": site.url("/click")}),
        content_type="application/json",
    )
    assert opened.status_code == 201, opened.content
    sid = opened.json()["id"]
    assert opened.json()["title"] == "before"

    clicked = alice_client.post(
        f"/sessions/api/{sid}/click",
        json.dumps({"selector": "#go"}),
        content_type="application/json",
    )
    assert clicked.status_code == 200, clicked.content
    assert clicked.json()["title"] == "after"

    state = alice_client.get(f"/sessions/api/{sid}")
    assert state.json()["title"] == "after"
    shot = alice_client.get(f"/sessions/api/{sid}/screenshot")
    assert shot["Content-Type"] == "image/png" and shot.content[:4] == b"\x89PNG"


def test_clicking_the_screenshot_clicks_the_page(host, site, alice, alice_client):
    sessions = Sessions(available=unknown_memory)
    sid = sessions.scrape(alice, site.url("/click"), keep=True).session.pk
    # The button sits at (10, 120)-(210, 180): the image input posts where it was hit.
    response = alice_client.post(
        f"/sessions/{sid}/act/", {"action": "click", "at.x": "50", "at.y": "150"}
    )
    assert response.status_code == 302
    assert sessions.act(alice, sid, "state").title == "after"
    page = alice_client.get(f"/sessions/{sid}/")
    assert b'type="image"' in page.content and b"after" in page.content


@pytest.mark.slow
def test_a_kept_page_survives_between_processes(host, site, alice):
    sessions = Sessions(available=unknown_memory)
    record = sessions.scrape(alice, site.url("/click"), keep=True).session
    script = (
        "import sys; from sessions_app.pool import Pool\n"
        "pool = Pool()\n"
        "async def main(ws, target):\n"
        "    page = await pool.page(ws, target)\n"
        "    await pool.act(page, 'click', {'selector': '#go'}, 10)\n"
        "    print(await page.title())\n"
        "    await pool.stop()\n"
        "pool.run(main(sys.argv[1], sys.argv[2]))\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "newsroom.settings"}
    done = subprocess.run(
        [sys.executable, "-c", script, host.ws_url, record.target_id],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "after"
    # The other process has gone; the page it clicked is still here, changed.
    outcome = sessions.act(alice, record.pk, "state")
    assert outcome.title == "after"


def test_typing_fills_secrets_and_never_echoes_them(host, site, alice, alice_client):
    set_secret(alice, "pin", "4711-hidden")
    sessions = Sessions(available=unknown_memory)
    sid = sessions.scrape(alice, site.url("/click"), keep=True).session.pk
    response = alice_client.post(
        f"/sessions/api/{sid}/type",
        json.dumps({"text": "code {{secret:pin}}", "selector": "#field"}),
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    assert b"4711-hidden" not in response.content
    assert "secret pin" in response.json()["message"]
    page = get_pool()
    value = page.run(
        _field_value(host.ws_url, BrowserSession.objects.get(pk=sid).target_id)
    )
    assert value == "code 4711-hidden"
    missing = alice_client.post(
        f"/sessions/api/{sid}/type",
        json.dumps({"text": "{{secret:nope}}"}),
        content_type="application/json",
    )
    assert missing.status_code == 400 and "nope" in missing.json()["error"]


async def _field_value(ws_url: str, target_id: str) -> str:
    pool = get_pool()
    page = await pool.page(ws_url, target_id)
    return await page.input_value("#field")


def test_another_readers_session_is_refused(host, site, alice, bob, client):
    sid = (
        Sessions(available=unknown_memory)
        .scrape(alice, site.url("/plain"), keep=True)
        .session.pk
    )
    client.force_login(bob)
    assert client.get(f"/sessions/api/{sid}").status_code == 403
    assert client.get(f"/sessions/{sid}/").status_code == 404
    assert client.post(f"/sessions/api/{sid}/close").status_code == 403


def test_the_reaper_closes_an_idle_page_and_says_why(
    host, site, alice, alice_client, clock
):
    sessions = Sessions(clock=clock, available=unknown_memory)
    sid = sessions.scrape(alice, site.url("/plain"), keep=True).session.pk
    reaper = Reaper(clock=clock, available=unknown_memory)
    clock.advance(299)
    assert reaper.sweep().closed == []
    clock.advance(2)
    result = reaper.sweep()
    reason = "it was idle for 301 s; 1 sessions were open and memory admits 15"
    assert result.closed == [(sid, reason)]
    record = BrowserSession.objects.get(pk=sid)
    assert (record.state, record.reason) == ("gone", reason)
    assert record.target_id not in get_pool().run(get_pool().targets(host.ws_url))
    listing = alice_client.get("/sessions/")
    assert reason.encode() in listing.content
    gone = alice_client.get(f"/sessions/api/{sid}")
    assert gone.status_code == 410 and "idle for 301 s" in gone.json()["error"]


def test_a_page_used_after_the_reclaim_decision_stays_open(host, site, alice, clock):
    sessions = Sessions(clock=clock, available=unknown_memory)
    sid = sessions.scrape(alice, site.url("/plain"), keep=True).session.pk
    reaper = Reaper(clock=clock, available=unknown_memory)
    clock.advance(400)
    closings, result = reaper.decide()
    assert [c.record.pk for c in closings] == [sid]
    sessions.act(alice, sid, "scroll", dy=100)  # the reader acts meanwhile
    assert reaper.carry_out(closings, result).closed == []
    assert BrowserSession.objects.get(pk=sid).state == "open"


def test_a_busy_page_holds_its_slot_and_is_not_reclaimed(
    host, site, alice, clock, settings
):
    sessions = Sessions(clock=clock, available=unknown_memory)
    busy = sessions.scrape(alice, site.url("/plain"), keep=True).session
    idle = sessions.scrape(alice, site.url("/plain"), keep=True).session
    clock.advance(5)
    sessions.registry().touch(busy, busy=True)  # an action is running on it
    clock.advance(10)
    # Memory is short: every idle page must go, the busy one still counts.
    settings.NEWSROOM_BROWSER_RESERVE_MB = 1024
    result = Reaper(clock=clock, available=lambda: 1023).sweep()
    assert [sid for sid, _ in result.closed] == [idle.pk]
    assert "2 sessions were open" in result.closed[0][1]
    assert BrowserSession.objects.get(pk=busy.pk).state == "open"


def test_the_session_ttl_closes_with_its_reason(host, site, alice, clock):
    sessions = Sessions(clock=clock, available=unknown_memory)
    sid = sessions.scrape(alice, site.url("/plain"), keep=True).session.pk
    for _ in range(7):  # used every 90 s, so never idle, until the TTL
        clock.advance(90)
        sessions.act(alice, sid, "state")
    closed = Reaper(clock=clock, available=unknown_memory).sweep().closed
    assert closed == [(sid, "it reached the session limit of 600 s")]


@pytest.mark.slow
def test_memory_pressure_closes_the_heaviest_readers_longest_idle_page(
    host, site, alice, bob, clock, settings
):
    sessions = Sessions(clock=clock, available=unknown_memory)
    bobs = sessions.scrape(bob, site.url("/plain"), keep=True).session.pk
    clock.advance(10)
    alice_old = sessions.scrape(alice, site.url("/plain"), keep=True).session.pk
    clock.advance(10)
    alice_new = sessions.scrape(alice, site.url("/plain"), keep=True).session.pk
    clock.advance(10)
    # Something else ate the memory: available is just under the reserve, so
    # one page must go although none is near the idle prior.
    settings.NEWSROOM_BROWSER_RESERVE_MB = 1024
    reaper = Reaper(clock=clock, available=lambda: 1023)
    result = reaper.sweep()
    assert [sid for sid, _ in result.closed] == [alice_old]
    assert "3 sessions were open and memory admits 2" in result.closed[0][1]
    states = dict(BrowserSession.objects.values_list("pk", "state"))
    assert (states[bobs], states[alice_new]) == ("open", "open")


def test_an_open_while_another_is_opening_in_a_full_pool_answers_429(
    host, site, alice, alice_client, settings
):
    settings.NEWSROOM_BROWSER_MAX_TABS = 2  # one kept page, one tab for rendering
    # Another request is opening a page: its reservation holds the only slot.
    slot = Sessions().registry().reserve(1)
    response = alice_client.post(
        "/sessions/api/open",
        json.dumps({"url": site.url("/plain")}),
        content_type="application/json",
    )
    assert response.status_code == 429
    assert (
        "1 browser session is open or opening and memory admits 1"
        in response.json()["error"]
    )
    refused = BrowserSession.objects.get(state="gone")
    assert refused.reason.startswith(
        "it could not be opened: 1 browser session is open"
    )
    slot.release()
    again = alice_client.post(
        "/sessions/api/open",
        json.dumps({"url": site.url("/plain")}),
        content_type="application/json",
    )
    assert again.status_code == 201


def test_opening_in_a_full_pool_reclaims_the_longest_idle_page(
    host, site, alice, settings
):
    settings.NEWSROOM_BROWSER_MAX_TABS = 2
    sessions = Sessions(available=unknown_memory)
    first = sessions.scrape(alice, site.url("/plain"), keep=True).session.pk
    second = sessions.scrape(alice, site.url("/plain"), keep=True).session.pk
    record = BrowserSession.objects.get(pk=first)
    assert record.state == "gone"
    assert record.reason.endswith("1 sessions were open and memory admits 1")
    assert BrowserSession.objects.get(pk=second).state == "open"


def test_a_private_address_is_refused_unless_allowed(host, site, alice, settings):
    settings.NEWSROOM_ALLOW_PRIVATE_NETWORKS = False
    with pytest.raises(SessionError) as caught:
        Sessions(available=unknown_memory).scrape(alice, site.url("/plain"), keep=True)
    assert caught.value.status == 400 and "private" in str(caught.value)
    # Requests the page itself makes are blocked in the browser too.
    pool = get_pool()
    html = f"<img src='{site.url('/pixel.png')}'><title>embeds</title>"
    hits_before = list(site.hits)
    state = pool.run(pool.render(host.ws_url, "data:text/html," + html, [], None, 10))
    assert state.title == "embeds"
    assert "/pixel.png" not in site.hits[len(hits_before) :]
    assert any("private" in b for b in state.blocked)
    # A kept page that ended up on a refused address is taken off it.
    settings.NEWSROOM_ALLOW_PRIVATE_NETWORKS = True
    sessions = Sessions(available=unknown_memory)
    sid = sessions.scrape(alice, site.url("/plain"), keep=True).session.pk
    settings.NEWSROOM_ALLOW_PRIVATE_NETWORKS = False
    outcome = sessions.act(alice, sid, "state")
    assert outcome.url == "about:blank"
    assert any("private" in b for b in outcome.blocked)
    settings.NEWSROOM_ALLOW_PRIVATE_NETWORKS = True
    assert (
        Sessions(available=unknown_memory)
        .scrape(alice, site.url("/plain"), keep=False)
        .title
        == "plain"
    )


def test_reap_sessions_logs_each_close_with_its_reason(host, site, alice):
    from io import StringIO

    from django.core.management import call_command
    from django.utils import timezone

    sid = (
        Sessions(available=unknown_memory)
        .scrape(alice, site.url("/plain"), keep=True)
        .session.pk
    )
    BrowserSession.objects.filter(pk=sid).update(
        last_used_at=timezone.now() - timezone.timedelta(seconds=400)
    )
    out = StringIO()
    call_command("reap_sessions", "--once", stdout=out)
    assert f"closed {sid}: it was idle for 400 s" in out.getvalue()
    assert BrowserSession.objects.get(pk=sid).state == "gone"


def test_the_interact_view_acts_through_htmx(host, site, alice, alice_client):
    sid = (
        Sessions(available=unknown_memory)
        .scrape(alice, site.url("/click"), keep=True)
        .session.pk
    )
    response = alice_client.post(
        f"/sessions/{sid}/act/",
        {"action": "click", "selector": "#go"},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200
    assert b'id="panel"' in response.content and b"after" in response.content
    assert b"<html" not in response.content


def test_a_navigation_away_is_reported(host, site, alice):
    sessions = Sessions(available=unknown_memory)
    sid = sessions.scrape(alice, site.url("/click"), keep=True).session.pk
    outcome = sessions.act(alice, sid, "click", selector="#away")
    assert outcome.url == site.url("/plain")
    assert outcome.navigated == f"{site.url('/click')} -> {site.url('/plain')}"
    assert outcome.message == f"the page navigated away to {site.url('/plain')}"
    assert BrowserSession.objects.get(pk=sid).current_url == site.url("/plain")


def test_a_scrape_not_kept_opens_its_page_on_first_use(host, site, alice):
    sessions = Sessions(available=unknown_memory)
    record = sessions.scrape(alice, site.url("/click"), keep=False).session
    assert record.state == "not_opened"
    outcome = sessions.act(alice, record.pk, "click", selector="#go")
    assert outcome.title == "after"
    assert BrowserSession.objects.get(pk=record.pk).state == "open"


def test_a_dead_browser_is_relaunched_under_a_new_tag(chromium, db, settings):
    from sessions_app import browser as host_mod
    from sessions_app.models import BrowserHost

    # The recorded browser answers nothing (it crashed): the next user launches one.
    BrowserHost.objects.create(
        pk=1, tag="deadbeef", endpoint="http://127.0.0.1:9", ws_url="ws://127.0.0.1:9/x"
    )
    fresh = host_mod.ensure_browser()
    try:
        assert fresh.tag not in ("", "deadbeef")
        assert host_mod.probe(fresh)
        assert (
            host_mod.ensure_browser().pid == fresh.pid
        )  # alive: reused, not relaunched
    finally:
        host_mod.stop_browser()
    assert not host_mod.probe(fresh)


@pytest.mark.django_db(transaction=True)
def test_a_browser_source_run_journals_the_rendered_links(host, site, alice):
    from fold_app.models import Delivery
    from newsroom.runs.executor import RunExecutor
    from newsroom.runs.models import Run
    from newsroom.runs.worker import claim_run, queue_run, worker_tag

    Source.objects.create(
        reader=alice,
        kind="browser",
        url=site.url("/js"),
        title="app",
        link_pattern=r"/story/\d+$",
    )
    run = queue_run(alice, Run.Trigger.MANUAL)
    assert claim_run(run, worker_tag())
    async_to_sync(RunExecutor(run, listen=False).execute)()
    run.refresh_from_db()
    assert [s["state"] for s in run.status["sources"]] == ["ok"]
    delivery = Delivery.objects.get()
    assert delivery.kind == "browser"
    entries = json.loads(bytes(delivery.body))["entries"]
    assert [e["title"] for e in entries] == ["First story", "Second story"]


# Last in the module: it stops the shared browser.
def test_shutdown_closes_every_page_with_its_reason(host, site, alice, bob):
    sessions = Sessions(available=unknown_memory)
    ids = [
        sessions.scrape(reader, site.url("/plain"), keep=True).session.pk
        for reader in (alice, bob)
    ]
    closed = Reaper(available=unknown_memory).shutdown()
    assert sorted(closed) == sorted(ids)
    reasons = set(
        BrowserSession.objects.filter(pk__in=ids).values_list("reason", flat=True)
    )
    assert reasons == {"the server shut down"}
    host.refresh_from_db()
    assert host.tag == ""
