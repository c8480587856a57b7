"""The session table: bounds, reservations, and the 403/404/410 answers."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from newsroom.tests.clock import HandClock
from sessions_app.models import BrowserHost, BrowserSession
from sessions_app.reaper import Reaper
from sessions_app.registry import (
    Full,
    Registry,
    RegistryLimits,
    SessionError,
    new_tag,
    session_id,
)

pytestmark = pytest.mark.django_db

START = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def registry(tag: str = "aaaa0001", clock=None) -> Registry:
    return Registry(
        tag,
        limits=RegistryLimits(),
        max_record_bytes=4096,
        clock=clock or HandClock(START),
    )


def status(call) -> int | None:
    try:
        call()
    except SessionError as e:
        return e.status
    return None


def test_records_are_bounded_by_bytes_and_tell_ids_apart(alice, bob):
    reg = registry()
    first = reg.insert(alice, "https://a.test/")
    assert reg.get(first.pk, alice) == first
    assert status(lambda: reg.get(first.pk, bob)) == 403
    assert status(lambda: reg.get("nope", alice)) == 404
    elsewhere = session_id(new_tag())
    assert status(lambda: reg.get(elsewhere, alice)) == 410
    for _ in range(64):
        reg.insert(alice, "https://a.test/")
    assert reg.record_bytes() <= 4096
    # Issued by this browser generation and not found: it expired (404), the oldest first.
    assert status(lambda: reg.get(first.pk, alice)) == 404
    survivors = BrowserSession.objects.count()
    assert 0 < survivors < 65


def test_the_410_message_says_to_scrape_again(alice):
    old = registry("aaaa0001").insert(alice, "https://a.test/")
    with pytest.raises(SessionError) as caught:
        registry("bbbb0002").get(old.pk, alice)
    assert caught.value.status == 410
    assert "scrape the page again" in str(caught.value)


def test_open_records_are_never_evicted(alice):
    reg = registry()
    kept = reg.insert(
        alice, "https://a.test/", opened={"target_id": "t", "context_id": "c"}
    )
    for _ in range(64):
        reg.insert(alice, "https://a.test/")
    assert reg.get(kept.pk, alice).state == BrowserSession.State.OPEN


def test_a_record_evicted_while_opening_can_still_be_closed(alice):
    reg = registry()
    record = reg.insert(alice, "https://a.test/")
    fetched = reg.get(record.pk, alice)
    for _ in range(64):
        reg.insert(alice, "https://a.test/")
    assert status(lambda: reg.get(record.pk, alice)) == 404, "should have been evicted"
    reg.mark_open(fetched, context_id="c", target_id="t")
    assert reg.get(record.pk, alice).state == BrowserSession.State.OPEN
    with pytest.raises(Full):
        reg.reserve(1)  # the open page holds the only slot
    assert reg.mark_closed(record.pk, "the reader closed it")
    assert reg.open_count() == 0
    with reg.reserve(1):
        pass


def test_reservations_count_until_released():
    reg = registry()
    first = reg.reserve(1)
    with pytest.raises(Full) as caught:
        reg.reserve(1)
    assert caught.value.status == 429
    assert caught.value.taken == 1
    assert "1 browser session is open or opening and memory admits 1" in str(
        caught.value
    )
    first.release()
    reg.reserve(1).release()


def test_a_reservation_left_by_a_dead_process_stops_counting():
    clock = HandClock(START)
    reg = registry(clock=clock)
    reg.reserve(1)  # never released: its process died mid-open
    clock.advance(121)
    reg.reserve(1).release()


def test_never_opened_records_expire_at_the_ttl(alice):
    clock = HandClock(START)
    reg = registry(clock=clock)
    stale = reg.insert(alice, "https://a.test/")
    kept = reg.insert(alice, "https://b.test/", opened={"target_id": "t"})
    clock.advance(601)
    reg.insert(alice, "https://c.test/")
    assert not BrowserSession.objects.filter(pk=stale.pk).exists()
    assert BrowserSession.objects.filter(pk=kept.pk).exists()


def test_closing_keeps_the_reason_and_answers_410(alice):
    reg = registry()
    record = reg.insert(alice, "https://a.test/", opened={"target_id": "t"})
    assert reg.mark_closed(record.pk, "it reached the session limit of 600 s")
    with pytest.raises(SessionError) as caught:
        reg.get(record.pk, alice)
    assert caught.value.status == 410
    assert "session limit of 600 s" in str(caught.value)


def test_a_stale_reclaim_decision_does_not_close(alice):
    clock = HandClock(START)
    reg = registry(clock=clock)
    record = reg.insert(alice, "https://a.test/", opened={"target_id": "t"})
    decided_on = record.last_used_at
    clock.advance(5)
    reg.touch(record)
    assert not reg.mark_closed(record.pk, "idle", expect_used=decided_on)
    assert reg.get(record.pk, alice).state == BrowserSession.State.OPEN


def test_a_dead_browser_closes_its_sessions(alice):
    # The recorded endpoint answers nothing: the browser is gone.
    BrowserHost.objects.create(
        pk=1, tag="aaaa0001", endpoint="http://127.0.0.1:9", ws_url="ws://127.0.0.1:9/x"
    )
    record = registry().insert(alice, "https://a.test/", opened={"target_id": "t"})
    result = Reaper(clock=HandClock(START), available=lambda: None).sweep()
    assert result.closed == [(record.pk, "the browser exited")]
    record.refresh_from_db()
    assert (record.state, record.reason) == ("gone", "the browser exited")


def test_a_page_in_use_is_not_reclaimed_until_its_mark_goes_stale(alice):
    clock = HandClock(START)
    reg = registry(clock=clock)
    record = reg.insert(alice, "https://a.test/", opened={"target_id": "t"})
    reg.touch(record, busy=True)  # an action starts
    used = record.last_used_at
    clock.advance(60)
    assert reg.is_busy(record)
    assert not reg.mark_closed(record.pk, "idle", expect_used=used)
    clock.advance(61)  # the process running the action died: the mark expires
    assert not reg.is_busy(record)
    assert reg.mark_closed(record.pk, "idle", expect_used=used)
