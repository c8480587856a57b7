"""`serve` creates the first reader with a random password, exactly once."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.contrib.auth import authenticate, get_user_model

from newsroom.management.commands.serve import Command

pytestmark = pytest.mark.django_db


def first_run() -> str:
    out = StringIO()
    command = Command(stdout=out)
    command.ensure_first_reader()
    return out.getvalue()


def printed_password(text: str) -> str:
    match = re.search(r"password: (\S+)", text)
    assert match, text
    return match.group(1)


def test_first_run_creates_one_operator_and_prints_a_working_password():
    text = first_run()
    users = get_user_model().objects.all()
    assert [u.username for u in users] == ["admin"]
    assert users[0].is_staff and users[0].is_superuser
    password = printed_password(text)
    assert len(password) >= 12
    assert authenticate(username="admin", password=password) is not None


def test_later_runs_create_nobody_and_print_no_password():
    first_run()
    text = first_run()
    assert get_user_model().objects.count() == 1
    assert "password:" not in text
    assert "admin" in text


def test_existing_readers_mean_no_first_reader(make_reader):
    make_reader("alice")
    first_run()
    assert list(get_user_model().objects.values_list("username", flat=True)) == [
        "alice"
    ]


def test_the_password_is_random_each_fresh_install():
    seen = set()
    for _ in range(3):
        seen.add(printed_password(first_run()))
        get_user_model().objects.all().delete()
    assert len(seen) == 3
