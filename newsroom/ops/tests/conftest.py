"""Operators, readers and heartbeats for the ops tests."""

from __future__ import annotations

import pytest

from newsroom.ops.heartbeat import ROLES, Heartbeats
from newsroom.tests.clock import HandClock

TOKEN = "ops-token-for-the-tests-0123456789"


@pytest.fixture(autouse=True)
def ops_settings(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.NEWSROOM_OPS_TOKEN = TOKEN
    settings.NEWSROOM_HEARTBEAT_INTERVAL = 15.0
    return settings


@pytest.fixture
def operator(django_user_model):
    # Staff: an operator, sees /healthz and /metrics through the session.
    return django_user_model.objects.create_user(
        username="olga", password="pw", is_staff=True
    )


@pytest.fixture
def operator_client(client, operator):
    client.force_login(operator)
    return client


@pytest.fixture
def clock():
    return HandClock()


@pytest.fixture
def all_roles_beating(db):
    """One process per role that has just beaten."""
    beats = []
    for role in ROLES:
        hb = Heartbeats(process=f"testhost:{1000 + len(beats)}")
        hb.add(role)
        hb.beat()
        beats.append(hb)
    return beats
