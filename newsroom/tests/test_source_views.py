"""The sources pages: list with health, add by URL, edit, delete, move."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from newsroom.sources.models import Category, Source
from newsroom.tests.localserver import Route, serve
from newsroom.tests.test_discovery import ATOM, RSS, page

pytestmark = pytest.mark.django_db


@pytest.fixture
def web(fetch):
    # The add view fetches through the safe fetcher; `fetch` lets it reach loopback.
    return fetch


def test_list_shows_health_and_marks_failing_sources_red(alice_client, alice):
    now = timezone.now()
    Source.objects.create(
        reader=alice,
        url="https://ok.example/feed",
        title="Fine",
        last_status="ok",
        last_success_at=now,
    )
    Source.objects.create(
        reader=alice,
        url="https://bad.example/feed",
        title="Broken",
        last_status="error",
        last_error="HTTP 503 from bad.example",
        error_count=3,
        next_attempt_at=now + timedelta(hours=2),
    )
    html = alice_client.get(reverse("source_list")).content.decode()
    assert 'class="failing"' in html
    assert "HTTP 503 from bad.example" in html
    assert "failing · 3×" in html
    assert "1 failing" in html
    assert (now + timedelta(hours=2)).strftime("%b") in html


def test_adding_a_feed_url_adds_it_directly(alice_client, alice, web):
    with serve({"/news.xml": Route(RSS, "application/rss+xml")}) as site:
        response = alice_client.post(
            reverse("source_add"),
            {"url": site.url("/news.xml"), "kind": "feed"},
            follow=True,
        )
    source = Source.objects.get(reader=alice)
    assert (source.url, source.title, source.kind) == (
        site.url("/news.xml"),
        "Example News",
        "feed",
    )
    assert "This address is a feed" in response.content.decode()


def test_adding_a_page_with_one_feed_link_adds_that_feed_in_the_chosen_category(
    alice_client, alice, web
):
    world = Category.objects.create(reader=alice, name="World")
    head = '<link rel="alternate" type="application/atom+xml" title="Site posts" href="/atom">'
    with serve(
        {"/": Route(page(head)), "/atom": Route(ATOM, "application/atom+xml")}
    ) as site:
        alice_client.post(
            reverse("source_add"),
            {"url": site.base, "kind": "feed", "category": world.pk},
        )
    source = Source.objects.get(reader=alice)
    assert (source.url, source.title, source.category) == (
        site.url("/atom"),
        "Site posts",
        world,
    )
    assert source.site_url == site.url("/")


def test_several_feeds_are_offered_and_the_ticked_ones_added(alice_client, alice, web):
    head = (
        '<link rel="alternate" type="application/rss+xml" title="Posts" href="/posts.rss">'
        '<link rel="alternate" type="application/rss+xml" title="Comments" href="/comments.rss">'
        '<link rel="alternate" type="application/atom+xml" title="Podcast" href="/pod.atom">'
    )
    with serve({"/": Route(page(head))}) as site:
        response = alice_client.post(
            reverse("source_add"), {"url": site.base, "kind": "feed"}
        )
    html = response.content.decode()
    assert response.status_code == 200
    assert "Several feeds found" in html
    assert "Posts (RSS)" in html and "Podcast (Atom)" in html
    assert not Source.objects.exists()

    offered = [site.url("/posts.rss"), site.url("/comments.rss"), site.url("/pod.atom")]
    form = {
        "offered": offered,
        "offered_title": ["Posts (RSS)", "Comments (RSS)", "Podcast (Atom)"],
        "feeds": [offered[0], offered[2]],
        "category": "",
    }
    alice_client.post(reverse("source_add"), form)
    assert sorted(
        Source.objects.filter(reader=alice).values_list("title", flat=True)
    ) == ["Podcast", "Posts"]


def test_a_feed_that_was_not_offered_cannot_be_smuggled_in(alice_client, alice):
    form = {
        "offered": ["https://a.example/rss"],
        "offered_title": ["A"],
        "feeds": ["https://evil.example/x"],
    }
    response = alice_client.post(reverse("source_add"), form)
    assert response.status_code == 400
    assert "not one of the available choices" in response.content.decode()
    assert not Source.objects.exists()


def test_offered_feeds_must_be_http_addresses(alice_client, alice):
    bad = "javascript:alert(1)"
    form = {"offered": [bad], "offered_title": ["A"], "feeds": [bad]}
    assert alice_client.post(reverse("source_add"), form).status_code == 400
    assert not Source.objects.exists()


def test_no_feed_found_says_so_on_the_url_field(alice_client, web):
    with serve({"/": Route(page())}) as site:
        response = alice_client.post(
            reverse("source_add"), {"url": site.base, "kind": "feed"}
        )
    assert response.status_code == 400
    html = response.content.decode()
    assert "No feed found" in html and 'aria-invalid="true"' in html
    assert not Source.objects.exists()


def test_a_url_that_cannot_be_fetched_is_reported(alice_client, web):
    with serve({}) as site:
        response = alice_client.post(
            reverse("source_add"), {"url": site.url("/gone"), "kind": "feed"}
        )
    assert response.status_code == 400
    assert "HTTP 404" in response.content.decode()


def test_adding_a_feed_twice_adds_it_once(alice_client, alice, web):
    with serve({"/news.xml": Route(RSS, "application/rss+xml")}) as site:
        for _ in range(2):
            response = alice_client.post(
                reverse("source_add"),
                {"url": site.url("/news.xml"), "kind": "feed"},
                follow=True,
            )
    assert Source.objects.filter(reader=alice).count() == 1
    assert "already have" in response.content.decode()


def test_scrape_sources_need_a_valid_regular_expression(alice_client, alice):
    bad = {
        "url": "https://news.example/",
        "kind": "scrape",
        "link_pattern": "/story/(\\d+",
    }
    response = alice_client.post(reverse("source_add"), bad)
    assert response.status_code == 400
    assert "not a valid regular expression" in response.content.decode()
    assert not Source.objects.exists()
    good = dict(bad, link_pattern="/story/\\d+")
    alice_client.post(reverse("source_add"), good)
    source = Source.objects.get(reader=alice)
    assert (source.kind, source.link_pattern) == ("scrape", "/story/\\d+")


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("", "This field is required"),
        ("ftp://x.example/", "Only http and https"),
        ("http://", "has no host name"),
    ],
)
def test_bad_addresses_are_explained(alice_client, url, says):
    response = alice_client.post(reverse("source_add"), {"url": url, "kind": "browser"})
    assert response.status_code == 400
    assert says in response.content.decode()


def test_edit_changes_every_field(alice_client, alice):
    source = Source.objects.create(reader=alice, url="https://a.example/feed")
    tech = Category.objects.create(reader=alice, name="Tech")
    form = {
        "title": "A",
        "url": "b.example/page",
        "kind": "scrape",
        "category": tech.pk,
        "link_pattern": "/p/\\d+",
    }
    response = alice_client.post(reverse("source_edit", args=[source.pk]), form)
    assert response.status_code == 302
    source.refresh_from_db()
    assert (
        source.title,
        source.url,
        source.kind,
        source.category,
        source.link_pattern,
    ) == ("A", "https://b.example/page", "scrape", tech, "/p/\\d+")


def test_edit_explains_bad_fields_and_changes_nothing(alice_client, alice, bob):
    Source.objects.create(reader=alice, url="https://taken.example/")
    source = Source.objects.create(
        reader=alice, url="https://a.example/feed", title="Kept"
    )
    bobs = Category.objects.create(reader=bob, name="Bob's")
    form = {
        "title": "New",
        "url": "https://taken.example/",
        "kind": "scrape",
        "category": bobs.pk,
        "link_pattern": "([",
    }
    response = alice_client.post(reverse("source_edit", args=[source.pk]), form)
    html = response.content.decode()
    assert response.status_code == 400
    assert "already have another source with this address" in html
    assert "not a valid regular expression" in html
    assert "Select a valid choice" in html  # Bob's category is not offered to Alice
    source.refresh_from_db()
    assert (source.title, source.url) == ("Kept", "https://a.example/feed")


def test_a_new_address_clears_the_old_health(alice_client, alice):
    source = Source.objects.create(
        reader=alice,
        url="https://old.example/feed",
        etag='"v1"',
        last_error="HTTP 410",
        error_count=4,
        next_attempt_at=timezone.now(),
        retry_after=timezone.now(),
    )
    form = {"title": "Renamed", "url": source.url, "kind": "feed"}
    alice_client.post(reverse("source_edit", args=[source.pk]), form)
    source.refresh_from_db()
    assert (source.title, source.error_count, source.etag) == ("Renamed", 4, '"v1"')
    alice_client.post(
        reverse("source_edit", args=[source.pk]),
        dict(form, url="https://new.example/feed"),
    )
    source.refresh_from_db()
    assert (source.error_count, source.last_error, source.etag) == (0, "", "")
    assert source.next_attempt_at is None and source.retry_after is None


def test_delete_asks_first_then_deletes(alice_client, alice):
    source = Source.objects.create(
        reader=alice, url="https://a.example/feed", title="Doomed"
    )
    confirm = alice_client.get(reverse("source_delete", args=[source.pk]))
    assert "Delete Doomed?" in confirm.content.decode()
    assert Source.objects.filter(pk=source.pk).exists()
    alice_client.post(reverse("source_delete", args=[source.pk]))
    assert not Source.objects.filter(pk=source.pk).exists()


def test_move_one_and_many_sources(alice_client, alice):
    world = Category.objects.create(reader=alice, name="World")
    a = Source.objects.create(reader=alice, url="https://a.example/")
    b = Source.objects.create(reader=alice, url="https://b.example/", category=world)
    alice_client.post(reverse("source_move", args=[a.pk]), {"category": world.pk})
    a.refresh_from_db()
    assert a.category == world
    alice_client.post(
        reverse("source_move_many"), {"sources": [a.pk, b.pk], "category": ""}
    )
    assert not Source.objects.filter(reader=alice, category__isnull=False).exists()


def test_move_does_not_follow_an_offsite_next(alice_client, alice):
    a = Source.objects.create(reader=alice, url="https://a.example/")
    response = alice_client.post(
        reverse("source_move", args=[a.pk]),
        {"category": "", "next": "https://evil.example/"},
    )
    assert response["Location"] == reverse("category_list")


def test_discovery_goes_through_the_safe_fetcher(alice_client, settings):
    # Without NEWSROOM_ALLOW_PRIVATE_NETWORKS a loopback address is refused, not fetched.
    settings.NEWSROOM_ALLOW_PRIVATE_NETWORKS = False
    with serve({"/news.xml": Route(RSS, "application/rss+xml")}) as site:
        response = alice_client.post(
            reverse("source_add"), {"url": site.url("/news.xml"), "kind": "feed"}
        )
        assert site.requests == []
    assert response.status_code == 400
    assert "Could not fetch" in response.content.decode()
    assert not Source.objects.exists()


def test_list_filters_by_health_and_searches(alice_client, alice, bob):
    world = Category.objects.create(reader=alice, name="World")
    Source.objects.create(
        reader=alice,
        url="https://ok.example/",
        title="Okay",
        category=world,
        last_fetched_at=timezone.now(),
    )
    Source.objects.create(
        reader=alice,
        url="https://bad.example/",
        title="Broken",
        error_count=2,
        last_fetched_at=timezone.now(),
    )
    Source.objects.create(reader=alice, url="https://new.example/", title="Fresh")
    Source.objects.create(
        reader=bob, url="https://bob.example/", title="Bob's broken", error_count=1
    )

    def shown(**params):
        html = alice_client.get(reverse("source_list"), params).content.decode()
        return {
            t
            for t in ["Okay", "Broken", "Fresh", "Bob&#x27;s broken"]
            if f">{t}<" in html
        }

    assert shown() == {"Okay", "Broken", "Fresh"}
    assert shown(show="failing") == {"Broken"}
    assert shown(show="never") == {"Fresh"}
    assert shown(q="world") == {"Okay"}
    assert shown(q="bad.example") == {"Broken"}
    assert shown(q="nothing like it") == set()
