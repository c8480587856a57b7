"""Fixtures shared by every app's tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def make_reader(django_user_model):
    """Create readers: `make_reader("alice")`. Each reader sees only their own rows."""

    def make(username: str = "alice", password: str = "correct horse battery", **extra):
        return django_user_model.objects.create_user(username=username, password=password, **extra)

    return make


@pytest.fixture
def alice(make_reader):
    # Alice owns the rows under test.
    return make_reader("alice")


@pytest.fixture
def bob(make_reader):
    # Bob is another reader: he must never see Alice's rows.
    return make_reader("bob")


@pytest.fixture
def alice_client(client, alice):
    client.force_login(alice)
    return client


@pytest.fixture(autouse=True)
def _no_briefing_after_runs(settings):
    # A briefing after each run waits for the fold worker, which most tests do
    # not run; the tests of that behaviour turn it back on.
    settings.NEWSROOM_BRIEF_AFTER_RUN = False
