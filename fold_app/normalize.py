"""Raw entries to item versions: clean fields, a stable key, a completeness score.

Pure: imports no Django. The merge rule lives here too, so the live fold and
the replay in reindex cannot disagree about which version wins.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from datetime import datetime
from urllib.parse import urljoin

from fold_app.parsing import RawEntry
from fold_app.sanitize import (
    clean_html,
    html_to_text,
    is_absolute_http,
    sanitized_html_to_text,
    text_to_html,
)

# Column limits of Item (PostgreSQL enforces them; SQLite would not).
MAX_URL = 2000
MAX_GUID = 2000
MAX_AUTHOR = 500
# Control characters other than whitespace, deleted by str.translate (a C loop).
_CONTROL = dict.fromkeys([*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F])


@dataclass
class Version:
    """One entry of one delivery, ready to become (or replace) an item."""

    key: str
    guid: str
    url: str
    title: str
    author: str
    published: datetime | None
    html: str
    text: str
    completeness: int


def normalize(raw: RawEntry) -> Version | None:
    """The entry as an item version; None when it has nothing to show."""
    base = raw.base if is_absolute_http(raw.base) else ""
    url = _absolute_url(raw.url, base)
    title = _one_line(html_to_text(raw.title) if raw.title_is_html else raw.title)
    if raw.content_is_html:
        # Relative links in the content resolve against its xml:base or the
        # feed's address, else against the entry's own link.
        html = clean_html(raw.content, base or url)
    else:
        html = text_to_html(raw.content)
    text = sanitized_html_to_text(html)
    guid = _one_line(raw.guid)
    if not (guid or url or title or text):
        return None
    author = _one_line(raw.author)[:MAX_AUTHOR]
    version = Version(
        key=entry_key(guid, url, title, html),
        guid=guid[:MAX_GUID],
        url=url,
        title=title,
        author=author,
        published=raw.published,
        html=html,
        text=text,
        completeness=0,
    )
    version.completeness = completeness(version)
    return version


def entry_key(guid: str, url: str, title: str, html: str) -> str:
    """GUID, else URL, else the content: hashed to a fixed width, tagged by kind
    so a GUID that happens to equal another entry's URL cannot collide."""
    if guid:
        basis = "guid\0" + guid
    elif url:
        basis = "url\0" + url
    else:
        basis = "content\0" + title + "\0" + html
    return hashlib.sha256(basis.encode("utf-8", "surrogatepass")).hexdigest()


def completeness(version: Version) -> int:
    """How much of an entry is there: fields present, then content length.

    Fields weigh more than length so a version with a date and an author beats
    one that is merely longer; length counts up to 4,000 characters of text so
    a longer body still beats a teaser.
    """
    score = 0
    score += 20 if version.title else 0
    score += 20 if version.url else 0
    score += 15 if version.published else 0
    score += 5 if version.author else 0
    score += min(len(version.text), 4000) // 100
    return score


def wins(new: tuple[int, datetime, str], old: tuple[int, datetime, str] | None) -> bool:
    """Whether a version replaces the current one. Each side is (completeness,
    received_at, delivery id): more complete wins; equal completeness goes to the
    later delivery in journal order. Being a plain maximum, the result does not
    depend on the order the versions are folded in."""
    return old is None or new > old


def _absolute_url(url: str, base: str) -> str:
    url = _drop_control(url).strip()
    if not url:
        return ""
    if base and not is_absolute_http(url):
        try:
            url = urljoin(base, url)
        except ValueError:
            return ""
    # Item links are only ever web pages: a javascript: or data: link is dropped.
    if not is_absolute_http(url) or len(url) > MAX_URL:
        return ""
    return url


def _drop_control(value: str) -> str:
    # Every character _CONTROL deletes is unprintable, so a printable string
    # (most are) is returned as is without the per-character table lookups of
    # str.translate, which cost several times the check.
    return value if value.isprintable() else value.translate(_CONTROL)


def _one_line(value: str) -> str:
    return " ".join(_drop_control(value).split())


@dataclass
class ItemState:
    """What the journal decides about an item: everything reindex must reproduce.

    Timestamps come from the journal too (received_at of the deliveries), so a
    replay produces the very same values as the live fold did.
    """

    key: str
    guid: str
    url: str
    title: str
    author: str
    published: datetime | None
    html: str
    text: str
    completeness: int
    delivery_id: str | None
    updated_at: datetime  # received_at of the delivery whose version this is
    first_seen_at: datetime  # received_at of the earliest delivery that had it

    @property
    def rank(self) -> tuple[int, datetime, str]:
        return (self.completeness, self.updated_at, self.delivery_id or "")


JOURNAL_FIELDS = (
    "guid",
    "url",
    "title",
    "author",
    "published",
    "html",
    "text",
    "completeness",
    "delivery_id",
    "updated_at",
    "first_seen_at",
)


def merge(
    current: ItemState | None, version: Version, received_at: datetime, delivery_id: str
) -> ItemState | None:
    """The item after this version is folded in; None when nothing changes."""
    rank = (version.completeness, received_at, delivery_id)
    if current is not None and not wins(rank, current.rank):
        if received_at < current.first_seen_at:
            # An earlier delivery folded late still moves "first seen" back.
            return replace(current, first_seen_at=received_at)
        return None
    first_seen = (
        received_at if current is None else min(current.first_seen_at, received_at)
    )
    return ItemState(
        key=version.key,
        guid=version.guid,
        url=version.url,
        title=version.title,
        author=version.author,
        published=version.published,
        html=version.html,
        text=version.text,
        completeness=version.completeness,
        delivery_id=delivery_id,
        updated_at=received_at,
        first_seen_at=first_seen,
    )


def best_per_key(versions: list[Version]) -> dict[str, Version]:
    """One version per key within a delivery: the more complete, ties to the
    later entry in the document."""
    best: dict[str, Version] = {}
    for version in versions:
        held = best.get(version.key)
        if held is None or version.completeness >= held.completeness:
            best[version.key] = version
    return best
