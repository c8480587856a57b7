"""The categories page: create, rename and describe, reorder, delete, move sources."""

from __future__ import annotations

import pytest
from django.urls import reverse

from newsroom.sources.models import Category, Source

pytestmark = pytest.mark.django_db


def names(reader) -> list[str]:
    return list(Category.objects.filter(reader=reader).values_list("name", flat=True))


def test_create_appends_in_order(alice_client, alice):
    for name in ["World", "Tech", "Science"]:
        response = alice_client.post(
            reverse("category_list"), {"name": name, "description": ""}
        )
        assert response.status_code == 302
    assert names(alice) == ["World", "Tech", "Science"]


def test_create_explains_a_missing_or_taken_name(alice_client, alice, bob):
    Category.objects.create(reader=alice, name="World")
    Category.objects.create(
        reader=bob, name="Tech"
    )  # Bob's names do not clash with Alice's
    response = alice_client.post(reverse("category_list"), {"name": "world"})
    assert response.status_code == 400
    assert "already have a category named" in response.content.decode()
    response = alice_client.post(reverse("category_list"), {"name": "   "})
    assert response.status_code == 400
    assert "This field is required" in response.content.decode()
    assert (
        alice_client.post(reverse("category_list"), {"name": "Tech"}).status_code == 302
    )
    assert names(alice) == ["World", "Tech"]


def test_rename_and_describe(alice_client, alice):
    category = Category.objects.create(reader=alice, name="Wrold")
    response = alice_client.post(
        reverse("category_edit", args=[category.pk]),
        {"name": "World", "description": "Abroad"},
    )
    assert response.status_code == 302
    category.refresh_from_db()
    assert (category.name, category.description) == ("World", "Abroad")


def test_rename_to_a_taken_name_is_refused(alice_client, alice):
    Category.objects.create(reader=alice, name="World")
    tech = Category.objects.create(reader=alice, name="Tech")
    response = alice_client.post(
        reverse("category_edit", args=[tech.pk]), {"name": "World"}
    )
    assert response.status_code == 400
    tech.refresh_from_db()
    assert tech.name == "Tech"


def test_reorder_moves_one_place_and_stops_at_the_ends(alice_client, alice):
    # Positions all 0 at first (as an old import might leave them): ordered by name.
    a, b, c = (Category.objects.create(reader=alice, name=n) for n in "ABC")
    alice_client.post(reverse("category_down", args=[a.pk]))
    assert names(alice) == ["B", "A", "C"]
    alice_client.post(reverse("category_up", args=[c.pk]))
    assert names(alice) == ["B", "C", "A"]
    alice_client.post(reverse("category_up", args=[b.pk]))
    alice_client.post(reverse("category_down", args=[a.pk]))
    assert names(alice) == ["B", "C", "A"]
    assert list(
        Category.objects.filter(reader=alice).values_list("position", flat=True)
    ) == [0, 1, 2]


def test_the_page_shows_categories_in_their_order(alice_client, alice):
    z = Category.objects.create(reader=alice, name="Zulu", position=0)
    Category.objects.create(reader=alice, name="Alpha", position=1)
    Source.objects.create(reader=alice, url="https://a.example/", category=z)
    html = alice_client.get(reverse("category_list")).content.decode()
    assert html.index("Zulu") < html.index("Alpha")
    alice_client.post(reverse("category_down", args=[z.pk]))
    html = alice_client.get(reverse("category_list")).content.decode()
    assert html.index("Alpha") < html.index("Zulu")


def test_reorder_needs_post(alice_client, alice):
    a = Category.objects.create(reader=alice, name="A")
    assert alice_client.get(reverse("category_up", args=[a.pk])).status_code == 405


def test_reorder_by_htmx_returns_the_list(alice_client, alice):
    a = Category.objects.create(reader=alice, name="A", position=0)
    Category.objects.create(reader=alice, name="B", position=1)
    response = alice_client.post(
        reverse("category_down", args=[a.pk]), HTTP_HX_REQUEST="true", follow=True
    )
    assert 'id="category-list"' in response.content.decode()
    assert names(alice) == ["B", "A"]


def test_delete_asks_first_and_leaves_sources_uncategorised(alice_client, alice):
    world = Category.objects.create(reader=alice, name="World")
    source = Source.objects.create(
        reader=alice, url="https://a.example/", category=world
    )
    confirm = alice_client.get(
        reverse("category_delete", args=[world.pk])
    ).content.decode()
    assert "Its 1 source will stay, uncategorised" in confirm
    response = alice_client.post(
        reverse("category_delete", args=[world.pk]), follow=True
    )
    assert "its 1 source is now uncategorised" in response.content.decode()
    source.refresh_from_db()
    assert source.category is None


def test_page_lists_sources_under_their_categories_with_a_move_control(
    alice_client, alice
):
    world = Category.objects.create(reader=alice, name="World", description="Abroad")
    Source.objects.create(
        reader=alice, url="https://a.example/", title="Alpha", category=world
    )
    Source.objects.create(reader=alice, url="https://b.example/", title="Loose one")
    html = alice_client.get(reverse("category_list")).content.decode()
    assert "Abroad" in html
    assert (
        html.index("World")
        < html.index("Alpha")
        < html.index("Uncategorised")
        < html.index("Loose one")
    )
    assert reverse("source_move", args=[Source.objects.get(title="Alpha").pk]) in html
