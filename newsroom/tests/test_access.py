"""Who may see what: login everywhere, readers see only their own rows, admin is staff-only."""

from __future__ import annotations

import uuid

import pytest
from django.contrib import admin
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from newsroom.sources.models import Category, Source

pytestmark = pytest.mark.django_db

# Pages a visitor must reach before logging in.
PUBLIC = {"login", "logout"}
# Operator pages answer 404, not a login redirect, to everyone but staff and the
# ops token (tested in newsroom/ops/tests/test_access.py).
OPERATOR_ONLY = {"healthz", "metrics"}
SAMPLE = {"int": 1, "str": "x", "slug": "x", "path": "x", "uuid": uuid.UUID(int=1)}


def named_patterns(resolver=None, namespace=""):
    """Every named URL pattern outside the admin, with sample values for its arguments."""
    for entry in (resolver or get_resolver()).url_patterns:
        if isinstance(entry, URLResolver):
            if entry.namespace == "admin":
                continue
            yield from named_patterns(entry, entry.namespace or namespace)
        elif isinstance(entry, URLPattern) and entry.name:
            converters = getattr(entry.pattern, "converters", {})
            kwargs = {
                name: SAMPLE.get(
                    type(conv).__name__.replace("Converter", "").lower(), "x"
                )
                for name, conv in converters.items()
            }
            name = f"{namespace}:{entry.name}" if namespace else entry.name
            yield name, kwargs


ALL = sorted({name: kwargs for name, kwargs in named_patterns()}.items())
PRIVATE = [
    (name, kwargs) for name, kwargs in ALL if name not in PUBLIC | OPERATOR_ONLY
]


def test_the_walk_finds_the_pages_it_should():
    names = {name for name, _ in ALL}
    assert {
        "dashboard",
        "source_list",
        "source_edit",
        "category_list",
        "opml_export",
    } <= names


def test_only_the_login_page_is_public(client):
    assert client.get(reverse("login")).status_code == 200
    # Newsroom sends no mail, so there is no password reset by email.
    assert client.get("/accounts/password_reset/").status_code == 404


@pytest.mark.parametrize(("name", "kwargs"), PRIVATE, ids=[n for n, _ in PRIVATE])
def test_every_page_needs_a_login(client, name, kwargs):
    url = reverse(name, kwargs=kwargs)
    for method in (client.get, client.post):
        response = method(url)
        assert response.status_code == 302, f"{method.__name__.upper()} {url}"
        assert response["Location"].startswith(reverse("login")), url


@pytest.fixture
def alices(alice):
    # Alice owns these; Bob must get 404 on every one and change nothing.
    category = Category.objects.create(reader=alice, name="Alice's", position=0)
    Category.objects.create(reader=alice, name="Second", position=1)
    source = Source.objects.create(
        reader=alice, url="https://alice.example/", title="A", category=category
    )
    return source, category


def _snapshot():
    return (
        list(Source.objects.order_by("pk").values()),
        list(Category.objects.order_by("pk").values()),
    )


def test_a_reader_gets_404_on_another_readers_sources_and_categories(
    client, bob, alices
):
    source, category = alices
    client.force_login(bob)
    mine = Source.objects.create(reader=bob, url="https://bob.example/")
    before = _snapshot()
    cases = [
        ("get", "source_edit", source.pk, {}),
        (
            "post",
            "source_edit",
            source.pk,
            {"url": "https://x.example/", "kind": "feed"},
        ),
        ("get", "source_delete", source.pk, {}),
        ("post", "source_delete", source.pk, {}),
        ("post", "source_move", source.pk, {"category": ""}),
        # Bob's own source into Alice's category: the category is not his.
        ("post", "source_move", mine.pk, {"category": category.pk}),
        ("get", "category_edit", category.pk, {}),
        ("post", "category_edit", category.pk, {"name": "Bob was here"}),
        ("get", "category_delete", category.pk, {}),
        ("post", "category_delete", category.pk, {}),
        ("post", "category_up", category.pk, {}),
        ("post", "category_down", category.pk, {}),
    ]
    for method, name, pk, data in cases:
        response = getattr(client, method)(reverse(name, args=[pk]), data)
        assert response.status_code == 404, f"{method} {name}"
    for data in (
        {"sources": [source.pk], "category": ""},
        {"sources": [mine.pk], "category": category.pk},
    ):
        assert client.post(reverse("source_move_many"), data).status_code == 404
    assert _snapshot() == before


def test_every_view_with_a_source_or_category_id_is_covered(client, bob, alices):
    # New views taking a source or category pk must answer 404 to another reader too.
    source, category = alices
    client.force_login(bob)
    for name, kwargs in ALL:
        if set(kwargs) != {"pk"} or not name.startswith(("source_", "category_")):
            continue
        pk = source.pk if name.startswith("source_") else category.pk
        assert client.get(reverse(name, args=[pk])).status_code in (404, 405), name
        assert client.post(reverse(name, args=[pk])).status_code == 404, name


def test_lists_show_only_the_readers_own_rows(client, bob, alices):
    client.force_login(bob)
    for name in ["dashboard", "source_list", "category_list"]:
        html = client.get(reverse(name)).content.decode()
        assert "alice.example" not in html and "Alice&#x27;s" not in html, name
    assert b"alice.example" not in client.get(reverse("opml_export")).content


def test_admin_is_for_staff_only(client, alice, make_reader, alices):
    client.force_login(alice)  # a reader, not staff
    for url in ["/admin/", reverse("admin:newsroom_source_changelist")]:
        response = client.get(url)
        assert response.status_code == 302 and "/admin/login/" in response["Location"]
    operator = make_reader("operator", is_staff=True, is_superuser=True)
    client.force_login(operator)
    assert client.get("/admin/").status_code == 200


def test_every_admin_list_renders_with_search_and_filters(client, make_reader, alices):
    client.force_login(make_reader("operator", is_staff=True, is_superuser=True))
    for model, model_admin in admin.site._registry.items():
        url = reverse(
            f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist"
        )
        assert client.get(url).status_code == 200, url
        if model_admin.search_fields:
            assert client.get(url, {"q": "alice"}).status_code == 200, url
    source, category = alices
    html = client.get(
        reverse("admin:newsroom_source_changelist"), {"q": "alice"}
    ).content.decode()
    assert "alice.example" in html
    edit = reverse("admin:newsroom_category_change", args=[category.pk])
    assert client.get(edit).status_code == 200
