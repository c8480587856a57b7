"""Settings from the environment: good values parse, bad values stop the app loudly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from newsroom.env import (
    SettingError,
    channel_layers,
    database_config,
    env_bool,
    env_float,
    env_int,
    env_list,
    env_str,
    secret_key,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("value", ["1", "true", "TRUE", " yes ", "on"])
def test_bool_true_spellings(value):
    assert env_bool("X", False, environ={"X": value}) is True


@pytest.mark.parametrize("value", ["0", "false", "No", "off", ""])
def test_bool_false_spellings(value):
    assert env_bool("X", True, environ={"X": value}) is False


@pytest.mark.parametrize("value", ["2", "maybe", "enabled", "tru"])
def test_bool_refuses_anything_else(value):
    with pytest.raises(SettingError, match=f"X={value!r} is not a boolean"):
        env_bool("X", False, environ={"X": value})


def test_unset_values_take_their_defaults():
    assert env_bool("X", True, environ={}) is True
    assert env_int("X", 7, environ={}) == 7
    assert env_float("X", 1.5, environ={}) == 1.5
    assert env_list("X", ["a"], environ={}) == ["a"]
    assert env_str("X", "d", environ={}) == "d"


def test_int_parses_and_checks_bounds():
    assert env_int("P", 8000, minimum=1, maximum=65535, environ={"P": " 8080 "}) == 8080
    for bad, says in [
        ("80x", "not a whole number"),
        ("1.5", "not a whole number"),
        ("0", "below the minimum 1"),
        ("70000", "above the maximum 65535"),
    ]:
        with pytest.raises(SettingError, match=says):
            env_int("P", 8000, minimum=1, maximum=65535, environ={"P": bad})


def test_float_refuses_non_numbers_and_infinities():
    assert env_float("T", 30.0, minimum=1.0, environ={"T": "2.5"}) == 2.5
    for bad in ["soon", "nan", "inf", "0.5"]:
        with pytest.raises(SettingError):
            env_float("T", 30.0, minimum=1.0, environ={"T": bad})


def test_list_splits_on_commas_and_refuses_empty_entries():
    assert env_list("H", [], environ={"H": "a.example, b.example"}) == [
        "a.example",
        "b.example",
    ]
    for bad in ["a,,b", "a,", ",a", ""]:
        with pytest.raises(SettingError, match="empty entry"):
            env_list("H", [], environ={"H": bad})


def test_name_file_supplies_a_secret(tmp_path):
    secret = tmp_path / "key"
    secret.write_text("from-a-file\n")
    assert (
        env_str("SECRET_KEY", environ={"SECRET_KEY_FILE": str(secret)}) == "from-a-file"
    )
    # The variable itself wins over its file.
    assert (
        env_str(
            "SECRET_KEY",
            environ={"SECRET_KEY": "direct", "SECRET_KEY_FILE": str(secret)},
        )
        == "direct"
    )
    with pytest.raises(SettingError, match="SECRET_KEY_FILE=.* cannot be read"):
        env_str("SECRET_KEY", environ={"SECRET_KEY_FILE": str(tmp_path / "missing")})


def test_database_url_default_is_sqlite_in_wal_with_immediate_transactions(tmp_path):
    config = database_config("", tmp_path)
    assert config["ENGINE"] == "django.db.backends.sqlite3"
    assert config["NAME"] == str(tmp_path / "newsroom.sqlite3")
    assert config["OPTIONS"]["transaction_mode"] == "IMMEDIATE"
    assert "journal_mode=WAL" in config["OPTIONS"]["init_command"]
    assert "busy_timeout" in config["OPTIONS"]["init_command"]


def test_database_url_postgres_and_sqlite_urls(tmp_path):
    pg = database_config("postgres://news:pw@db.example:5433/newsroom", tmp_path)
    assert (pg["ENGINE"], pg["HOST"], pg["PORT"], pg["NAME"], pg["USER"]) == (
        "django.db.backends.postgresql",
        "db.example",
        5433,
        "newsroom",
        "news",
    )
    lite = database_config(f"sqlite:///{tmp_path}/other.db", tmp_path)
    assert lite["NAME"] == f"{tmp_path}/other.db"
    assert lite["OPTIONS"]["transaction_mode"] == "IMMEDIATE"


@pytest.mark.parametrize("url", ["mysql://u@h/db", "nonsense://x", "oracle://u@h/db"])
def test_database_url_refuses_other_databases(url, tmp_path):
    with pytest.raises(SettingError, match="DATABASE_URL"):
        database_config(url, tmp_path)


def test_redis_url_selects_the_channel_layer():
    assert (
        channel_layers("")["default"]["BACKEND"]
        == "channels.layers.InMemoryChannelLayer"
    )
    redis = channel_layers("redis://127.0.0.1:6379/3")["default"]
    assert redis["BACKEND"] == "newsroom.channel_layer.RedisChannelLayer"
    assert redis["CONFIG"]["hosts"] == ["redis://127.0.0.1:6379/3"]
    for bad in ["127.0.0.1:6379", "http://redis:6379", "postgres://x"]:
        with pytest.raises(SettingError, match="REDIS_URL"):
            channel_layers(bad)


def test_secret_key_is_generated_once_and_reused(tmp_path):
    path = tmp_path / "data" / "secret_key"
    first = secret_key("", path)
    assert len(first) >= 50
    assert path.read_text() == first
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert secret_key("", path) == first
    other = secret_key("", tmp_path / "elsewhere" / "secret_key")
    assert other != first


def test_secret_key_from_the_environment_must_be_long_enough(tmp_path):
    path = tmp_path / "secret_key"
    assert secret_key("k" * 40, path) == "k" * 40
    assert not path.exists()  # an explicit key is never written to disk
    with pytest.raises(SettingError, match="shorter than 32"):
        secret_key("short", path)


def _start_with(tmp_path, **env) -> subprocess.CompletedProcess:
    environ = {
        k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")
    }
    environ.update(
        NEWSROOM_DATA_DIR=str(tmp_path),
        DJANGO_SETTINGS_MODULE="newsroom.settings",
        **env,
    )
    code = "import django; django.setup(); from django.conf import settings; print(settings.DEBUG)"
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_bad_value_stops_the_app_naming_the_variable(tmp_path):
    bad = _start_with(tmp_path, DEBUG="sometimes")
    assert bad.returncode != 0
    assert "DEBUG='sometimes' is not a boolean" in bad.stderr
    good = _start_with(tmp_path, DEBUG="on")
    assert good.returncode == 0, good.stderr
    assert good.stdout.strip() == "True"
    assert (tmp_path / "secret_key").exists()
