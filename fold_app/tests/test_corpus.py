"""The whole feedparser test corpus through the journal and the fold.

Every file must go through record_delivery and fold_delivery without an
unhandled error, end with items or a recorded parse message on its delivery,
and leave no script-capable markup in any item.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from urllib.parse import quote

import pytest
from django.conf import settings

from fold_app.fold import fold_delivery
from fold_app.journal import record_delivery
from fold_app.models import Delivery, Item
from fold_app.tests.markup import unsafe_markup
from newsroom.sources.models import Source

CORPUS = (Path(settings.BASE_DIR) / ".." / "shared" / "corpus" / "feedparser").resolve()
_HEADER = re.compile(r"^Header:\s*([\w-]+):\s*(.*)$", re.MULTILINE)

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


def corpus_files() -> list[Path]:
    return sorted(CORPUS.rglob("*.xml"))


def headers_of(body: bytes) -> dict[str, str]:
    # Each file opens with a comment; some name the HTTP headers it was served with.
    head = body[:2000].decode("utf-8", "replace")
    return {name.lower(): value.strip() for name, value in _HEADER.findall(head)}


def test_the_whole_corpus_folds_without_error_and_without_script(alice):
    if not CORPUS.is_dir():
        pytest.skip(
            f"the feedparser corpus is not at {CORPUS} (../shared/corpus/feedparser)"
        )
    files = corpus_files()
    assert len(files) > 1000, f"only {len(files)} files in {CORPUS}"
    sources = Source.objects.bulk_create(
        Source(
            reader=alice,
            url=f"http://127.0.0.1/corpus/{quote(str(p.relative_to(CORPUS)))}",
        )
        for p in files
    )
    crashes, silent = [], []
    outcomes = Counter()
    for path, source in zip(files, sources, strict=True):
        body = path.read_bytes()
        headers = headers_of(body)
        delivery = record_delivery(
            source=source,
            body=body,
            content_type=headers.get("content-type", "application/xml"),
            url=headers.get("content-location", source.url),
        )
        try:
            result = fold_delivery(delivery)
        except Exception as e:  # noqa: BLE001 - collected so one run names them all
            crashes.append(f"{path.relative_to(CORPUS)}: {type(e).__name__}: {e}")
            continue
        outcomes[result.status] += 1
        delivery.refresh_from_db()
        if not (delivery.items_count or delivery.parse_error):
            silent.append(str(path.relative_to(CORPUS)))
    assert crashes == []
    assert silent == [], "deliveries with neither items nor a recorded message"
    assert Delivery.objects.filter(status="pending").count() == 0
    assert outcomes["parsed"] > 1100 and outcomes["failed"] >= 1, outcomes
    print(f"corpus: {len(files)} files, {dict(outcomes)}, {Item.objects.count()} items")

    unsafe = []
    for item in (
        Item.objects.only("html", "url", "source__url")
        .select_related("source")
        .iterator()
    ):
        problems = unsafe_markup(item.html)
        if item.url and not item.url.startswith(("http://", "https://")):
            problems.append(f"item url {item.url!r}")
        if problems:
            unsafe.append(f"{item.source.url}: {problems}")
    assert unsafe == []
    # The sanitize/ part of the corpus is made of attacks: they became items.
    assert Item.objects.filter(source__url__contains="/sanitize/").count() > 150
