"""Event collapse, categories and edges on a day of realistic news."""

from __future__ import annotations

import pytest

from newsroom.briefing.service import write_briefing
from newsroom.briefing.tests.conftest import DAY, END_OF_DAY
from newsroom.briefing.tests.news import (
    EXPECTED_CATEGORY,
    EXPECTED_EDGES,
    EXPECTED_EVENTS,
    EXPECTED_STORIES,
)

pytestmark = pytest.mark.django_db


def _brief(alice, embedder):
    return write_briefing(alice, DAY, embedder=embedder, now=END_OF_DAY)


def _event_of(briefing, items) -> dict:
    ids = {i.id for i in items}
    matches = [e for e in briefing.events if ids & set(e["items"])]
    assert len(matches) == 1, (
        f"items {sorted(ids)} are split over {len(matches)} events"
    )
    return matches[0]


def test_stories_told_by_several_sources_collapse_into_one_event_each(
    alice, news_day, embedder
):
    briefing = _brief(alice, embedder)
    assert len(briefing.events) == EXPECTED_EVENTS
    for story, count in EXPECTED_STORIES.items():
        event = _event_of(briefing, news_day[story])
        # Exactly the story's items: nothing from another story leaked in.
        assert sorted(event["items"]) == sorted(i.id for i in news_day[story]), story
        assert event["independent_sources"] == count
    singles = [k for k in news_day if k not in EXPECTED_STORIES]
    for title in singles:
        assert len(_event_of(briefing, news_day[title])["items"]) == 1, title


def test_events_are_ordered_by_importance_from_sources_and_recency(
    alice, news_day, embedder
):
    briefing = _brief(alice, embedder)
    importances = [e["importance"] for e in briefing.events]
    assert importances == sorted(importances, reverse=True)
    fed = _event_of(briefing, news_day["fed"])
    library = _event_of(
        briefing, news_day["City library extends weekend opening hours"]
    )
    assert fed["importance"] > library["importance"]
    assert fed["first_seen"] < fed["last_seen"]
    assert fed["sources"] == sorted(
        ["Capital Times", "Daily Ledger", "Morning Post", "Wire One"]
    )


def test_every_item_gets_one_of_the_readers_categories(alice, news_day, embedder):
    from fold_app.models import Item

    _brief(alice, embedder)
    own = set(alice.categories.values_list("id", flat=True))
    assert not Item.objects.filter(source__reader=alice, category__isnull=True).exists()
    assert (
        set(
            Item.objects.filter(source__reader=alice).values_list("category", flat=True)
        )
        <= own
    )
    for story, name in EXPECTED_CATEGORY.items():
        for item in news_day[story]:
            item.refresh_from_db()
            assert item.category.name == name, (story, item.title)


def test_a_sources_category_wins_over_meaning(alice, news_day, embedder):
    _brief(alice, embedder)
    # The library notice reads like nothing in particular; its source is Culture.
    library = news_day["City library extends weekend opening hours"][0]
    library.refresh_from_db()
    assert library.category.name == "Culture"
    # The first AI Act report comes from a science and technology source.
    first_ai = news_day["ai-act"][0]
    first_ai.refresh_from_db()
    assert first_ai.category.name == "Science and technology"


def test_a_reader_without_categories_gets_the_defaults_with_descriptions(
    alice, embedder
):
    _brief(alice, embedder)
    names = list(alice.categories.order_by("position").values_list("name", flat=True))
    assert names == [
        "Politics",
        "Economics",
        "Science and technology",
        "World",
        "Culture",
    ]
    assert all(c.description for c in alice.categories.all())


def test_events_that_share_names_are_connected_with_a_label(alice, news_day, embedder):
    briefing = _brief(alice, embedder)
    edges = briefing.graph["edges"]
    for story, other_title, name in EXPECTED_EDGES:
        a = _event_of(briefing, news_day[story])["key"]
        b = _event_of(briefing, news_day[other_title])["key"]
        edge = next((e for e in edges if {e["a"], e["b"]} == {a, b}), None)
        assert edge is not None, f"no edge between {story} and {other_title!r}"
        assert name in edge["shared"]
        assert name in edge["label"]
    # Unrelated stories are not linked: the Cannes winner and the asteroid sample.
    cannes = _event_of(briefing, news_day["cannes"])["key"]
    nasa = _event_of(briefing, news_day["nasa"])["key"]
    assert not any({e["a"], e["b"]} == {cannes, nasa} for e in edges)


def test_every_edge_joins_two_drawn_events_and_says_what_they_share(
    alice, news_day, embedder
):
    briefing = _brief(alice, embedder)
    keys = {n["key"] for n in briefing.graph["nodes"]}
    assert briefing.graph["edges"]
    for edge in briefing.graph["edges"]:
        assert edge["a"] in keys and edge["b"] in keys and edge["a"] != edge["b"]
        assert edge["kind"] in {"names", "meaning"}
        assert edge["label"].startswith(("Both involve", "Close in meaning"))
