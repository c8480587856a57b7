"""Fixtures for the briefing tests: the embedder (loaded once) and a day of news."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from newsroom.briefing.categories import ensure_categories
from newsroom.briefing.embed import get_embedder
from newsroom.briefing.tests.news import NEWS, SOURCE_CATEGORIES

DAY = date(2026, 11, 30)
END_OF_DAY = datetime(2026, 11, 30, 23, 0, tzinfo=UTC)


@pytest.fixture(scope="session")
def embed_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("wordllama")


@pytest.fixture(scope="session")
def embedder(embed_dir):
    return get_embedder(embed_dir)


@pytest.fixture(autouse=True)
def _embed_cache(settings, embed_dir):
    # Views and commands load the embedder from settings: the same session copy.
    settings.NEWSROOM_EMBED_CACHE_DIR = str(embed_dir)
    settings.NEWSROOM_LLM_URL = ""


def make_items(reader, news=NEWS, day: date = DAY, prefix: str = ""):
    """Sources and items for `news` on `day`; returns {story or title: [items]}."""
    from fold_app.models import Item
    from newsroom.sources.models import Source

    categories = {c.name: c for c in ensure_categories(reader)}
    start = datetime(day.year, day.month, day.day, 6, 0, tzinfo=UTC)
    by_story: dict[str, list] = {}
    for n, (story, source_name, title, text, url) in enumerate(news):
        host = url.split("/")[2]
        source, _ = Source.objects.get_or_create(
            reader=reader,
            url=f"https://{host}/feed.xml",
            defaults={
                "title": source_name,
                "site_url": f"https://{host}/",
                "category": categories.get(SOURCE_CATEGORIES.get(source_name, "")),
            },
        )
        when = start + timedelta(minutes=20 * n)
        item = Item.objects.create(
            source=source,
            key=f"{prefix}{n}-{url}"[:64],
            title=title,
            url=url,
            text=text,
            html=f"<p>{text}</p>",
            published=when,
            first_seen_at=when,
            updated_at=when,
        )
        by_story.setdefault(story or title, []).append(item)
    return by_story


@pytest.fixture
def news_day(alice):
    return make_items(alice)
