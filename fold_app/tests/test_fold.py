"""fold_delivery: a delivery's entries become items, merged by the rule, in one
transaction with the delivery's outcome."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from fold_app.fold import fold_delivery, load_delivery
from fold_app.journal import record_delivery
from fold_app.models import Delivery, Item
from fold_app.parsing import LINKS_CONTENT_TYPE
from fold_app.signals import delivery_folded
from fold_app.tests.feeds import RSS_TYPE, rss
from fold_app.tests.markup import unsafe_markup
from newsroom.sources.models import Category, Source

pytestmark = pytest.mark.django_db


@pytest.fixture
def source(alice):
    news = Category.objects.create(reader=alice, name="News")
    return Source.objects.create(
        reader=alice, url="https://ex.org/feed.xml", category=news
    )


def deliver(source, body, *, at=None, content_type=RSS_TYPE, kind="feed"):
    delivery = record_delivery(
        source=source, body=body, content_type=content_type, kind=kind, url=source.url
    )
    if at is not None:
        Delivery.objects.filter(pk=delivery.pk).update(received_at=at)
        delivery.refresh_from_db()
    return delivery


def test_entries_become_items_with_clean_html(source):
    body = rss(
        {
            "guid": "a",
            "title": "Alpha",
            "link": "/alpha",
            "date": "Mon, 01 Jun 2026 10:00:00 GMT",
            "author": "ann@ex.org (Ann)",
            "html": '<p onclick="x()">Hi <a href="/more">more</a></p><script>1</script>',
        },
        {"link": "https://ex.org/beta", "title": "Beta"},
    )
    result = fold_delivery(deliver(source, body))
    assert (result.status, result.items, result.new_items) == ("parsed", 2, 2)
    alpha = Item.objects.get(guid__endswith="a", source=source)
    assert alpha.url == "https://ex.org/alpha"
    assert (
        alpha.html
        == '<p>Hi <a href="https://ex.org/more" rel="noopener noreferrer">more</a></p>'
    )
    assert alpha.text == "Hi more"
    assert alpha.category == source.category
    assert alpha.published.year == 2026 and alpha.author.endswith("(Ann)")
    assert unsafe_markup(alpha.html) == []
    delivery = Delivery.objects.get()
    assert (
        delivery.status == "parsed"
        and delivery.items_count == 2
        and delivery.new_items_count == 2
    )
    assert delivery.folded_at is not None and alpha.delivery_id == delivery.pk


def test_the_same_entry_again_updates_instead_of_duplicating(source):
    fold_delivery(deliver(source, rss({"guid": "a", "title": "Short"})))
    result = fold_delivery(
        deliver(
            source,
            rss(
                {"guid": "a", "title": "Longer", "html": "<p>" + "body " * 100 + "</p>"}
            ),
        )
    )
    assert (result.items, result.new_items) == (1, 0)
    assert Item.objects.get().title == "Longer"


def test_a_poorer_later_version_does_not_replace_a_richer_one(source):
    fold_delivery(
        deliver(
            source,
            rss(
                {
                    "guid": "a",
                    "title": "Rich",
                    "date": "Mon, 01 Jun 2026 10:00:00 GMT",
                    "html": "<p>" + "text " * 60 + "</p>",
                }
            ),
        )
    )
    fold_delivery(deliver(source, rss({"guid": "a", "title": "Poor"})))
    assert Item.objects.get().title == "Rich"


def test_equal_completeness_goes_to_the_later_delivery_in_journal_order(source):
    now = timezone.now()
    later = deliver(source, rss({"guid": "a", "title": "later"}), at=now)
    earlier = deliver(
        source, rss({"guid": "a", "title": "early"}), at=now - timedelta(minutes=1)
    )
    # Folded against journal order, the later delivery's version still stands.
    fold_delivery(later)
    fold_delivery(earlier)
    item = Item.objects.get()
    assert item.title == "later" and item.delivery_id == later.pk
    assert (
        item.first_seen_at == earlier.received_at
        and item.updated_at == later.received_at
    )


def test_a_broken_feed_records_its_error_on_the_delivery_and_the_source(source):
    source.last_status, source.error_count = "ok", 0
    source.save()
    result = fold_delivery(deliver(source, b"<rss version='2.0'><channel><title>x</ti"))
    assert result.status == "failed"
    delivery = Delivery.objects.get()
    assert delivery.status == "failed" and "cannot be read" in delivery.parse_error
    source.refresh_from_db()
    assert source.last_status == "unparsable" and "cannot be read" in source.last_error
    assert source.error_count == 1
    # A good fold afterwards clears only the fold's own marker.
    fold_delivery(deliver(source, rss({"guid": "a", "title": "ok"})))
    source.refresh_from_db()
    assert (source.last_status, source.last_error, source.error_count) == ("ok", "", 0)


def test_an_old_delivery_folded_late_does_not_overwrite_newer_fetch_health(source):
    old = deliver(
        source, b"not a feed at all", at=timezone.now() - timedelta(minutes=5)
    )
    deliver(source, rss({"guid": "a", "title": "new"}))
    source.last_status, source.last_error = "timeout", "The server did not answer."
    source.save()
    fold_delivery(old)
    source.refresh_from_db()
    assert (
        source.last_status == "timeout"
        and source.last_error == "The server did not answer."
    )
    assert Delivery.objects.get(pk=old.pk).status == "failed"


def test_an_html_page_is_a_failed_delivery_with_a_clear_message(source):
    result = fold_delivery(
        deliver(
            source,
            b"<!doctype html><html><body>Hi</body></html>",
            content_type="text/html",
        )
    )
    assert result.status == "failed"
    assert Delivery.objects.get().parse_error.startswith(
        "This is an HTML page, not a feed."
    )


def test_a_bozo_feed_that_parsed_keeps_its_items_and_notes_why(source):
    body = rss({"guid": "a", "title": "A"}).replace(
        b"<title>A</title>", b"<title>A &bogus;</title>"
    )
    result = fold_delivery(deliver(source, body))
    assert result.status == "parsed" and Item.objects.count() == 1
    assert "not well-formed" in Delivery.objects.get().parse_error


def test_link_deliveries_become_items(source):
    body = b'{"page_url": "https://ex.org/news/", "entries": [{"url": "a.html", "title": "A", "summary": "<b>s</b>"}]}'
    result = fold_delivery(
        deliver(source, body, content_type=LINKS_CONTENT_TYPE, kind="scrape")
    )
    assert result.status == "parsed"
    item = Item.objects.get()
    assert (
        item.url == "https://ex.org/news/a.html"
        and item.html == "<p>&lt;b&gt;s&lt;/b&gt;</p>"
    )


def test_a_folded_delivery_is_not_folded_again(source):
    delivery = deliver(source, rss({"guid": "a", "title": "A"}))
    fold_delivery(delivery)
    stale = Delivery.objects.get(pk=delivery.pk)
    stale.status = "pending"  # a second worker holding an old copy
    assert fold_delivery(stale).status == "skipped"
    assert Delivery.objects.get(pk=delivery.pk).items_count == 1


def test_delivery_folded_is_sent_after_commit_with_counts(
    source, django_capture_on_commit_callbacks
):
    fold_delivery(deliver(source, rss({"guid": "a", "title": "A"})))
    heard = []

    def receiver(sender, delivery, items, new_items, **kw):
        heard.append((delivery.pk, delivery.status, items, new_items))

    delivery_folded.connect(receiver)
    try:
        delivery = deliver(
            source, rss({"guid": "a", "title": "A"}, {"guid": "b", "title": "B"})
        )
        with django_capture_on_commit_callbacks(execute=True):
            fold_delivery(delivery)
        assert heard == [(delivery.pk, "parsed", 2, 1)]
    finally:
        delivery_folded.disconnect(receiver)


def test_items_of_one_source_do_not_merge_with_another(source, bob):
    other = Source.objects.create(reader=bob, url="https://ex.org/feed.xml")
    fold_delivery(deliver(source, rss({"guid": "a", "title": "Alice's"})))
    fold_delivery(deliver(other, rss({"guid": "a", "title": "Bob's"})))
    assert sorted(Item.objects.values_list("title", flat=True)) == ["Alice's", "Bob's"]


def test_load_delivery_gives_what_the_orm_gives(source):
    delivery = deliver(source, rss({"guid": "a", "title": "Alpha"}))
    Source.objects.filter(pk=source.pk).update(
        last_fetched_at=timezone.now(), etag='"v1"', error_count=2
    )
    loaded = load_delivery(delivery.pk)
    expected = Delivery.objects.select_related("source").get(pk=delivery.pk)
    for model, mine, orm in (
        (Delivery, loaded, expected),
        (Source, loaded.source, expected.source),
    ):
        for f in model._meta.concrete_fields:
            assert getattr(mine, f.attname) == getattr(orm, f.attname), f.name
            assert type(getattr(mine, f.attname)) is type(getattr(orm, f.attname))
    assert "source" in loaded._state.fields_cache
    assert not loaded._state.adding
    with pytest.raises(Delivery.DoesNotExist):
        load_delivery("0" * 26)
