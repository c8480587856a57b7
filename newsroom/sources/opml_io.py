"""Import and export a reader's sources as OPML (the upload view, the commands and
the starter list all come through here)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from django.db import transaction
from django.db.models import Max

from newsroom.sources.models import Category, Source
from newsroom.sources.opml import (
    OpmlCategory,
    OpmlDocument,
    OpmlError,
    OpmlFeed,
    build_opml,
    parse_opml,
)

STARTER_OPML = Path(__file__).with_name("starter.opml")
Progress = Callable[[str], None]


@dataclass
class ImportResult:
    added: int = 0
    duplicates: int = 0
    categories_created: int = 0

    def summary(self) -> str:
        parts = [f"Imported {self.added} source{'s' if self.added != 1 else ''}"]
        if self.categories_created:
            parts.append(
                f"{self.categories_created} new categor{'ies' if self.categories_created != 1 else 'y'}"
            )
        if self.duplicates:
            parts.append(
                f"{self.duplicates} duplicate{'s' if self.duplicates != 1 else ''} skipped"
            )
        return ", ".join(parts) + "."


def import_opml(reader, data: bytes, progress: Progress | None = None) -> ImportResult:
    """Add every feed of an OPML file to the reader's sources, all or nothing.

    Duplicates (already a source of the reader, or repeated in the file) are
    skipped and counted. Raises OpmlError and stores nothing when the file is bad.
    """
    say = progress or (lambda _message: None)
    document = parse_opml(data)
    say(
        f"Read {len(document.feeds)} feed{'s' if len(document.feeds) != 1 else ''} in "
        f"{len(document.categories)} folder{'s' if len(document.categories) != 1 else ''}."
    )
    _check_patterns(document)
    with transaction.atomic():
        return _store(reader, document, say)


def _check_patterns(document: OpmlDocument) -> None:
    for feed in document.feeds:
        if feed.link_pattern:
            try:
                re.compile(feed.link_pattern)
            except re.error as e:
                raise OpmlError(
                    f"The link pattern of {feed.title or feed.url!r} is not a valid regular "
                    f"expression: {e}."
                ) from None


def _store(reader, document: OpmlDocument, say: Progress) -> ImportResult:
    result = ImportResult()
    categories = {c.name: c for c in Category.objects.filter(reader=reader)}
    position = Category.objects.filter(reader=reader).aggregate(m=Max("position"))["m"]
    position = -1 if position is None else position
    wanted = {f.category for f in document.feeds if f.category}
    for spec in document.categories:
        if spec.name in categories or spec.name not in wanted:
            continue
        position += 1
        categories[spec.name] = Category.objects.create(
            reader=reader,
            name=spec.name,
            description=spec.description,
            position=position,
        )
        result.categories_created += 1

    known = set(Source.objects.filter(reader=reader).values_list("url", flat=True))
    new: list[Source] = []
    for feed in document.feeds:
        if feed.url in known:
            result.duplicates += 1
            continue
        known.add(feed.url)
        new.append(
            Source(
                reader=reader,
                url=feed.url,
                title=feed.title,
                site_url=feed.site_url,
                kind=feed.kind,
                link_pattern=feed.link_pattern,
                category=categories.get(feed.category) if feed.category else None,
            )
        )
    for start in range(0, len(new), 500):
        Source.objects.bulk_create(new[start : start + 500])
        done = min(start + 500, len(new))
        say(f"Stored {done} of {len(new)} new sources.")
    result.added = len(new)
    return result


def export_opml(reader) -> bytes:
    """The reader's categories (in their order) and sources (in the order added) as OPML."""
    categories = list(Category.objects.filter(reader=reader))
    names = {c.pk: c.name for c in categories}
    feeds = [
        OpmlFeed(
            url=s.url,
            title=s.title,
            site_url=s.site_url,
            category=names.get(s.category_id, ""),
            kind=s.kind,
            link_pattern=s.link_pattern,
        )
        for s in Source.objects.filter(reader=reader).order_by("pk")
    ]
    title = f"Newsroom sources of {reader.get_username()}"
    return build_opml(
        title, [OpmlCategory(c.name, c.description) for c in categories], feeds
    )


def import_starter(reader) -> ImportResult:
    """The starter list shipped with the app; reads only the file beside this module."""
    return import_opml(reader, STARTER_OPML.read_bytes())


__all__ = ["ImportResult", "OpmlError", "export_opml", "import_opml", "import_starter"]
