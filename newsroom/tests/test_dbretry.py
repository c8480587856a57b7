"""Riding out a database outage: what counts as one, and how it is said."""

from __future__ import annotations

import logging
import socket

import pytest
from django.db import IntegrityError, OperationalError, connection, connections

from newsroom.dbretry import Outage, describe, is_connection_error, retry_db
from newsroom.sources.models import Source
from newsroom.tests.clock import HandClock

LOG = "newsroom.dbretry"


def records(caplog, level=None):
    return [
        r
        for r in caplog.records
        if r.name == LOG and (level is None or r.levelno == level)
    ]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def refused_connection_error() -> OperationalError:
    """The error Django raises when PostgreSQL refuses the connection (a closed
    port stands in for a server that is down), whatever the suite runs on."""
    from django.db.backends.postgresql.base import DatabaseWrapper

    probe = DatabaseWrapper(
        {
            **connections.settings["default"],
            "ENGINE": "django.db.backends.postgresql",
            "HOST": "127.0.0.1",
            "PORT": str(closed_port()),
            "NAME": "newsroom",
            "USER": "postgres",
            "PASSWORD": "",
            "OPTIONS": {},
        },
        alias="probe",
    )
    with pytest.raises(OperationalError) as caught:
        probe.ensure_connection()
    return caught.value


@pytest.fixture
def refused(django_db_blocker) -> OperationalError:
    with django_db_blocker.unblock():  # it only tries to connect
        return refused_connection_error()


def test_an_outage_is_said_once_with_backoff_and_its_end_once(refused, caplog):
    caplog.set_level(logging.INFO, logger=LOG)
    clock = HandClock(100.0)
    outage = Outage("fold worker", first=0.5, cap=4.0, clock=clock)
    error = refused
    waits = [outage.failed(error, "a fold pass") for _ in range(6)]
    assert waits == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    (warning,) = records(caplog)
    assert warning.levelno == logging.WARNING
    assert warning.exc_info is None  # no traceback: an outage is not a bug
    message = warning.getMessage()
    assert message.startswith("fold worker: database unreachable during a fold pass (")
    assert message.endswith("); retrying until it is back")
    assert "\n" not in message  # psycopg's message runs over three lines
    clock.now += 12.5
    outage.recovered()
    outage.recovered()  # said once
    info = records(caplog, logging.INFO)
    assert [r.getMessage() for r in info] == [
        "fold worker: database reachable again after 12.5 s (6 failed attempts)"
    ]
    # The next outage starts over, with its own warning and backoff.
    assert outage.failed(error, "a fold pass") == 0.5
    assert len(records(caplog, logging.WARNING)) == 2


def test_no_outage_says_nothing(caplog):
    caplog.set_level(logging.INFO, logger=LOG)
    Outage("run worker").recovered()
    assert records(caplog) == []


def test_a_refused_connection_is_an_outage_on_one_line(refused):
    assert is_connection_error(refused)
    assert describe(refused).startswith("connection failed:")
    assert "\n" not in describe(refused)


@pytest.mark.django_db
def test_a_query_the_database_refuses_is_not_an_outage():
    with pytest.raises(Exception) as bad_sql:
        with connection.cursor() as cursor:
            cursor.execute("SELECT * FROM no_such_table")
    assert not is_connection_error(bad_sql.value)


@pytest.mark.django_db
def test_a_broken_rule_is_not_an_outage(alice):
    Source.objects.create(reader=alice, url="https://a.test/feed", title="a")
    with pytest.raises(IntegrityError) as duplicate:
        Source.objects.create(reader=alice, url="https://a.test/feed", title="a")
    assert not is_connection_error(duplicate.value)


def test_a_write_is_retried_through_an_outage_and_lands(db_via_proxy, alice, caplog):
    caplog.set_level(logging.INFO, logger=LOG)
    source = Source.objects.create(reader=alice, url="https://a.test/f", title="a")
    db_via_proxy.refuse()
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        if len(sleeps) == 3:
            db_via_proxy.accept()  # the database is back

    def write() -> int:
        return Source.objects.filter(pk=source.pk).update(title="written")

    outage = Outage("run 7", first=0.2, cap=5.0)
    assert retry_db(write, what="a journal write", outage=outage, sleep=sleep) == 1
    assert sleeps == [0.2, 0.4, 0.8]
    source.refresh_from_db()
    assert source.title == "written"
    warning, info = records(caplog)
    assert warning.levelno == logging.WARNING and warning.exc_info is None
    assert warning.getMessage().startswith(
        "run 7: database unreachable during a journal write ("
    )
    assert info.levelno == logging.INFO
    assert info.getMessage().startswith("run 7: database reachable again after")


def test_a_write_gives_up_past_its_budget(db_via_proxy, alice):
    db_via_proxy.refuse()
    clock = HandClock(100.0)

    def sleep(seconds: float) -> None:
        clock.now += seconds

    outage = Outage("run 7", first=0.2, cap=5.0, clock=clock)
    with pytest.raises(OperationalError):
        retry_db(
            Source.objects.count,
            what="a journal write",
            outage=outage,
            budget=3.0,
            sleep=sleep,
            clock=clock,
        )
    assert clock.now - 100.0 <= 3.0
    assert outage.down


@pytest.mark.django_db
def test_a_write_that_breaks_a_rule_is_not_retried(alice):
    Source.objects.create(reader=alice, url="https://a.test/f", title="a")
    sleeps: list[float] = []
    with pytest.raises(IntegrityError):
        retry_db(
            lambda: Source.objects.create(
                reader=alice, url="https://a.test/f", title="a"
            ),
            what="a journal write",
            outage=Outage("run 7"),
            sleep=sleeps.append,
        )
    assert sleeps == []
