"""Reading delivery bodies: every format by its own rules, clear errors for the rest."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from fold_app.parsing import LINKS_CONTENT_TYPE, parse_body

RSS = b"""<?xml version="1.0"?><rss version="2.0"><channel><title>T</title>
<link>https://ex.org/</link>
<item><title>One</title><link>/one</link><guid>g-1</guid>
<pubDate>Mon, 01 Jun 2026 10:00:00 GMT</pubDate><author>a@ex.org (Ann)</author>
<description>&lt;p&gt;first&lt;/p&gt;</description></item>
<item><title>Two</title><link>https://ex.org/two</link></item>
</channel></rss>"""

ATOM = b"""<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xml:base="https://ex.org/atom/">
<title>A</title><id>urn:feed</id><updated>2026-06-01T00:00:00Z</updated>
<entry><title type="html">&lt;b&gt;Bold&lt;/b&gt; title</title><id>urn:e1</id>
<link href="e1"/><updated>2026-06-01T12:30:00+02:00</updated>
<content type="html">&lt;a href="rel"&gt;x&lt;/a&gt;</content></entry></feed>"""

RDF = b"""<?xml version="1.0"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/">
<channel rdf:about="https://ex.org/"><title>R</title><link>https://ex.org/</link></channel>
<item rdf:about="https://ex.org/r1"><title>R1</title><link>https://ex.org/r1</link></item>
</rdf:RDF>"""


def test_rss_entries_are_read_with_their_fields():
    result = parse_body(RSS, "application/rss+xml", "feed", "https://ex.org/feed")
    assert result.error is None
    first, second = result.entries
    assert first.guid.endswith("g-1")
    assert first.url == "https://ex.org/one"
    assert first.title == "One"
    assert first.published == datetime(2026, 6, 1, 10, 0, tzinfo=UTC)
    assert "Ann" in first.author
    assert first.content == "<p>first</p>" and first.content_is_html
    assert second.guid == "" and second.url == "https://ex.org/two"


def test_atom_keeps_xml_base_and_html_titles():
    result = parse_body(ATOM, "application/atom+xml", "feed", "https://ex.org/feed")
    (entry,) = result.entries
    assert entry.title_is_html and "<b>Bold</b>" in entry.title
    assert entry.base == "https://ex.org/atom/"
    assert entry.published == datetime(2026, 6, 1, 10, 30, tzinfo=UTC)


def test_rdf_is_read():
    assert [e.url for e in parse_body(RDF, "", "feed").entries] == ["https://ex.org/r1"]


def test_json_feed_1_1_by_its_own_rules():
    doc = {
        "version": "https://jsonfeed.org/version/1.1",
        "title": "J",
        "home_page_url": "https://ex.org/",
        "authors": [{"name": "Feed Author"}],
        "items": [
            {
                "id": "1",
                "url": "/j1",
                "title": "J1",
                "content_html": "<p>x</p>",
                "date_published": "2026-06-01T10:00:00+02:00",
                "authors": [{"name": "Jo"}],
            },
            {"id": 2, "content_text": "plain <b>text</b>"},
            "not an object",
        ],
    }
    result = parse_body(json.dumps(doc).encode(), "application/feed+json", "feed")
    first, second = result.entries
    assert first.guid == "1" and first.url == "/j1" and first.base == "https://ex.org/"
    assert first.author == "Jo" and first.published == datetime(
        2026, 6, 1, 8, 0, tzinfo=UTC
    )
    assert (
        second.guid == "2"
        and not second.content_is_html
        and second.author == "Feed Author"
    )
    assert "1 items were not JSON objects" in result.notes[0]


def test_json_feed_1_author_object():
    doc = {
        "version": "https://jsonfeed.org/version/1",
        "author": {"name": "Old"},
        "items": [{"id": "a"}],
    }
    assert (
        parse_body(json.dumps(doc).encode(), "application/json", "feed")
        .entries[0]
        .author
        == "Old"
    )


def test_json_that_is_not_a_json_feed_is_a_clear_error():
    assert (
        "not a JSON Feed"
        in parse_body(b'{"hello": 1}', "application/json", "feed").error
    )
    assert (
        "not valid JSON"
        in parse_body(b'{"version": ', "application/json", "feed").error
    )


def test_link_deliveries_are_read_in_their_own_format():
    body = json.dumps(
        {
            "page_url": "https://ex.org/news/",
            "entries": [
                {
                    "url": "a.html",
                    "title": "A",
                    "summary": "Sum",
                    "published": "2026-06-01T09:00:00Z",
                },
                {"title": "no url"},
            ],
        }
    ).encode()
    result = parse_body(body, LINKS_CONTENT_TYPE, "scrape")
    (entry,) = result.entries
    assert entry.url == "a.html" and entry.base == "https://ex.org/news/"
    assert entry.content == "Sum" and not entry.content_is_html
    assert entry.published == datetime(2026, 6, 1, 9, 0, tzinfo=UTC)
    assert "1 links had no URL" in result.notes[0]
    assert "not valid" in parse_body(b"[1,", LINKS_CONTENT_TYPE, "browser").error


def test_an_html_page_is_a_clear_error_naming_its_feed():
    page = b'<!DOCTYPE html><html><head><link rel="alternate" type="application/rss+xml" href="/rss.xml"></head><body>hi</body></html>'
    result = parse_body(
        page, "text/html; charset=utf-8", "feed", "https://ex.org/blog/"
    )
    assert result.error.startswith("This is an HTML page, not a feed.")
    assert "https://ex.org/rss.xml" in result.error


def test_a_broken_feed_is_an_error():
    result = parse_body(
        b"<rss version='2.0'><channel><title>x</ti", "application/rss+xml", "feed"
    )
    assert (
        result.error
        and "cannot be read" in result.error
        and "unclosed token" in result.error
    )


def test_a_bozo_feed_that_parsed_keeps_its_entries():
    bozo = RSS.replace(b"<title>Two</title>", b"<title>Two &nbsp; &bogus; </title>")
    result = parse_body(bozo, "application/rss+xml", "feed")
    assert result.error is None and len(result.entries) == 2
    assert "not well-formed" in result.notes[0]


def test_empty_and_pruned_bodies():
    assert parse_body(b"  \n", "", "feed").error == "The response was empty."
    assert "pruned" in parse_body(None, "", "feed").error


def test_a_feed_with_no_entries_says_so():
    result = parse_body(
        b"<rss version='2.0'><channel><title>T</title></channel></rss>", "", "feed"
    )
    assert (
        result.error is None
        and result.entries == []
        and result.notes == ["The feed has no entries."]
    )


def test_plain_text_is_not_a_feed():
    assert "not a feed" in parse_body(b"hello there", "text/plain", "feed").error


def test_the_body_is_never_taken_for_a_path_or_url(tmp_path):
    # feedparser would open a file or URL named by a bare bytes/str body.
    secret = tmp_path / "secret.xml"
    secret.write_bytes(RSS)
    assert parse_body(str(secret).encode(), "", "feed").entries == []
    assert parse_body(b"https://127.0.0.1:9/feed", "", "feed").entries == []
