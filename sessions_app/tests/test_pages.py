"""Pages without a browser: listing, secrets, the serve role, the admin."""

from __future__ import annotations

import asyncio

import pytest
from django.utils import timezone

from sessions_app.models import BrowserSession, ReaderSecret
from sessions_app.reaper import ReaperService, service
from sessions_app.registry import Registry
from sessions_app.secrets import fill, set_secret

pytestmark = pytest.mark.django_db


def closed_session(owner, reason: str) -> BrowserSession:
    reg = Registry("aaaa0001")
    record = reg.insert(owner, "https://a.test/", opened={"target_id": "t"})
    reg.mark_closed(record.pk, reason)
    return record


def test_the_sessions_page_shows_why_each_closed(alice, bob, alice_client):
    closed_session(alice, "it reached the session limit of 600 s")
    closed_session(bob, "bob's own reason")
    page = alice_client.get("/sessions/")
    assert page.status_code == 200
    assert b"it reached the session limit of 600 s" in page.content
    assert b"bob&#x27;s own reason" not in page.content


def test_secrets_are_sealed_and_never_shown(alice, alice_client):
    response = alice_client.post(
        "/sessions/secrets/", {"name": "pin", "value": "s3cr3t-value"}
    )
    assert response.status_code == 302
    stored = ReaderSecret.objects.get(owner=alice, name="pin")
    assert "s3cr3t-value" not in stored.sealed
    page = alice_client.get("/sessions/secrets/")
    assert b"pin" in page.content and b"s3cr3t-value" not in page.content
    assert fill(alice, "x {{secret:pin}} y") == ("x s3cr3t-value y", ["pin"])


def test_a_readers_secrets_are_their_own(alice, bob, client):
    set_secret(alice, "pin", "alice-only")
    client.force_login(bob)
    assert client.post("/sessions/secrets/pin/delete/").status_code == 404
    assert ReaderSecret.objects.filter(owner=alice).count() == 1


def test_a_bad_secret_name_is_refused(alice_client):
    response = alice_client.post(
        "/sessions/secrets/", {"name": "no spaces", "value": "v"}
    )
    assert response.status_code == 400
    assert not ReaderSecret.objects.exists()


def test_the_admin_lists_sessions_and_never_secret_values(admin_client, alice):
    closed_session(alice, "the browser exited")
    set_secret(alice, "pin", "admin-must-not-see")
    sessions = admin_client.get("/admin/sessions_app/browsersession/")
    assert b"the browser exited" in sessions.content
    secrets = admin_client.get("/admin/sessions_app/readersecret/")
    assert secrets.status_code == 200 and b"admin-must-not-see" not in secrets.content
    secret = ReaderSecret.objects.get()
    detail = admin_client.get(f"/admin/sessions_app/readersecret/{secret.pk}/change/")
    assert secret.sealed.encode() not in detail.content


def test_an_unknown_session_is_404_in_the_api(alice_client):
    response = alice_client.get("/sessions/api/nothing-here")
    assert response.status_code == 404
    assert "never existed" in response.json()["error"]


def test_the_serve_role_is_configured(settings):
    assert "sessions_app.reaper.service" in settings.NEWSROOM_SERVICES
    assert isinstance(service(), ReaperService)


@pytest.mark.django_db(transaction=True)
def test_the_serve_role_sweeps_and_shuts_down(alice):
    # No browser is recorded: the role sweeps (closing nothing) and returns on stop.
    record = Registry("aaaa0001").insert(
        alice, "https://a.test/", opened={"target_id": "t"}
    )

    async def main() -> None:
        stop = asyncio.Event()
        stop.set()
        await ReaperService().run(stop)

    asyncio.run(main())
    record.refresh_from_db()
    assert record.state == "gone" and record.reason == "the browser exited"
    assert record.closed_at is not None and record.closed_at <= timezone.now()
