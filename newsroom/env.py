"""Settings from the environment: tiny readers that fail loudly on a bad value.

Imports nothing from Django so settings.py can use it before Django is set up.
"""

from __future__ import annotations

import os
from pathlib import Path


class SettingError(Exception):
    """A setting in the environment has a value that cannot be used."""


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _raw(name: str, environ: dict[str, str] | None) -> str | None:
    env = os.environ if environ is None else environ
    if name in env:
        return env[name]
    # Secrets may come from a file: NAME_FILE=/run/secrets/name.
    path = env.get(f"{name}_FILE")
    if path:
        try:
            return Path(path).read_text().strip()
        except OSError as e:
            raise SettingError(f"{name}_FILE={path!r} cannot be read: {e}") from e
    return None


def env_str(name: str, default: str = "", environ: dict[str, str] | None = None) -> str:
    value = _raw(name, environ)
    return default if value is None else value


def env_bool(name: str, default: bool = False, environ: dict[str, str] | None = None) -> bool:
    value = _raw(name, environ)
    if value is None:
        return default
    folded = value.strip().lower()
    if folded in _TRUE:
        return True
    if folded in _FALSE:
        return False
    raise SettingError(f"{name}={value!r} is not a boolean: use 1/0, true/false, yes/no or on/off")


def env_int(
    name: str,
    default: int,
    minimum: int | None = None,
    maximum: int | None = None,
    environ: dict[str, str] | None = None,
) -> int:
    value = _raw(name, environ)
    if value is None or value.strip() == "":
        return default
    try:
        number = int(value.strip())
    except ValueError:
        raise SettingError(f"{name}={value!r} is not a whole number") from None
    if minimum is not None and number < minimum:
        raise SettingError(f"{name}={number} is below the minimum {minimum}")
    if maximum is not None and number > maximum:
        raise SettingError(f"{name}={number} is above the maximum {maximum}")
    return number


def env_float(
    name: str,
    default: float,
    minimum: float | None = None,
    environ: dict[str, str] | None = None,
) -> float:
    value = _raw(name, environ)
    if value is None or value.strip() == "":
        return default
    try:
        number = float(value.strip())
    except ValueError:
        raise SettingError(f"{name}={value!r} is not a number") from None
    if number != number or number in (float("inf"), float("-inf")):
        raise SettingError(f"{name}={value!r} is not a finite number")
    if minimum is not None and number < minimum:
        raise SettingError(f"{name}={number} is below the minimum {minimum}")
    return number


def env_list(name: str, default: list[str], environ: dict[str, str] | None = None) -> list[str]:
    value = _raw(name, environ)
    if value is None:
        return list(default)
    items = [part.strip() for part in value.split(",")]
    if any(not part for part in items):
        raise SettingError(f"{name}={value!r} has an empty entry; separate values with single commas")
    return items


def database_config(url: str, data_dir: Path) -> dict:
    """Django DATABASES['default'] for DATABASE_URL; empty means the SQLite default."""
    if not url:
        return sqlite_config(data_dir / "newsroom.sqlite3")
    import dj_database_url

    try:
        config = dj_database_url.parse(url, conn_max_age=60, conn_health_checks=True)
    except Exception as e:  # dj_database_url raises several types for a bad URL
        raise SettingError(f"DATABASE_URL={url!r} cannot be parsed: {e}") from e
    engine = config.get("ENGINE", "")
    if engine.endswith("sqlite3"):
        return sqlite_config(Path(config["NAME"]))
    if not engine.endswith("postgresql"):
        raise SettingError(
            f"DATABASE_URL={url!r} names an unsupported database; use postgres:// or sqlite:///"
        )
    return config


def sqlite_config(path: Path) -> dict:
    # WAL lets readers run beside the one writer; IMMEDIATE takes the write lock
    # at BEGIN so two writers queue on busy_timeout instead of failing mid-way.
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": str(path),
        "OPTIONS": {
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
            "init_command": (
                "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
                "PRAGMA busy_timeout=20000; PRAGMA foreign_keys=ON;"
            ),
        },
        "TEST": {"NAME": str(path.with_name(path.stem + "-test.sqlite3"))},
    }


def channel_layers(url: str) -> dict:
    if not url:
        return {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    if not url.startswith(("redis://", "rediss://", "unix://")):
        raise SettingError(f"REDIS_URL={url!r} must start with redis://, rediss:// or unix://")
    # Our subclass of channels_redis's layer: reads that outlast its blocking
    # pop, and cancellations that are never lost (see newsroom/channel_layer.py).
    return {
        "default": {
            "BACKEND": "newsroom.channel_layer.RedisChannelLayer",
            "CONFIG": {"hosts": [url], "capacity": 1000, "expiry": 30},
        }
    }


def secret_key(value: str, path: Path) -> str:
    """SECRET_KEY from the environment, else one generated once and kept in a file."""
    if value:
        if len(value) < 32:
            raise SettingError("SECRET_KEY is shorter than 32 characters")
        return value
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    import secrets

    path.parent.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(50)
    # O_EXCL: two processes starting at once keep whichever wrote first.
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text().strip()
    with os.fdopen(fd, "w") as f:
        f.write(key)
    return key
