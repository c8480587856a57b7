"""Readers' secrets: sealed at rest, filled into typed text, never echoed."""

from __future__ import annotations

import base64
import hashlib
import re

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings

from sessions_app.models import ReaderSecret

PLACEHOLDER = re.compile(r"\{\{\s*secret:([A-Za-z0-9_-]+)\s*\}\}")


class MissingSecret(Exception):
    pass


def _fernet() -> Fernet:
    digest = hashlib.sha256(
        f"newsroom reader secrets:{settings.SECRET_KEY}".encode()
    ).digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def seal(value: str) -> str:
    return _fernet().encrypt(value.encode()).decode()


def unseal(token: str) -> str:
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken:
        raise MissingSecret(
            "a stored secret cannot be read: SECRET_KEY changed since it was saved; save it again"
        ) from None


def set_secret(owner, name: str, value: str) -> ReaderSecret:
    secret, _ = ReaderSecret.objects.update_or_create(
        owner=owner, name=name, defaults={"sealed": seal(value)}
    )
    return secret


def placeholders(text: str) -> list[str]:
    return PLACEHOLDER.findall(text)


def fill(owner, text: str) -> tuple[str, list[str]]:
    """`text` with every {{secret:NAME}} replaced by the reader's value; the names used."""
    names = sorted(set(placeholders(text)))
    if not names:
        return text, []
    found = {
        s.name: s for s in ReaderSecret.objects.filter(owner=owner, name__in=names)
    }
    missing = [n for n in names if n not in found]
    if missing:
        raise MissingSecret(
            f"no secret named {', '.join(missing)}: add it on the secrets page first"
        )
    values = {n: unseal(found[n].sealed) for n in names}
    return PLACEHOLDER.sub(lambda m: values[m.group(1)], text), names
