"""The dashboard groups the reader's sources by category, in the reader's order."""

from __future__ import annotations

import pytest
from django.urls import reverse

from newsroom.sources.models import Category, Source

pytestmark = pytest.mark.django_db


def test_sources_are_grouped_by_category_in_order_with_uncategorised_last(
    alice_client, alice, bob
):
    tech = Category.objects.create(reader=alice, name="Tech", position=1)
    world = Category.objects.create(reader=alice, name="World", position=0)
    Category.objects.create(reader=alice, name="Empty", position=2)
    Source.objects.create(
        reader=alice, url="https://t.example/", title="Tfeed", category=tech
    )
    Source.objects.create(
        reader=alice, url="https://w.example/", title="Wfeed", category=world
    )
    Source.objects.create(reader=alice, url="https://l.example/", title="Lfeed")
    Source.objects.create(reader=bob, url="https://b.example/", title="Bobfeed")
    html = alice_client.get(reverse("dashboard")).content.decode()
    order = [
        html.index(s)
        for s in ["World", "Wfeed", "Tech", "Tfeed", "Uncategorised", "Lfeed"]
    ]
    assert order == sorted(order)
    assert "Empty" not in html  # a category without sources is not a group
    assert "Bobfeed" not in html
    assert "3 sources in 3 groups" in html


def test_failing_sources_are_marked(alice_client, alice):
    Source.objects.create(
        reader=alice, url="https://x.example/", title="X", error_count=2
    )
    html = alice_client.get(reverse("dashboard")).content.decode()
    assert "1 failing" in html
    assert "source-row failing" in html


def test_an_empty_dashboard_offers_the_starter_list(alice_client):
    html = alice_client.get(reverse("dashboard")).content.decode()
    assert "No sources yet" in html
    assert reverse("starter_import") in html
    assert reverse("opml_import") in html
