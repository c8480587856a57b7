"""Link extraction and backoff arithmetic: pure, no database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from newsroom.runs.extract import BadPattern, extract_links, looks_like_html
from newsroom.runs.health import backoff, next_attempt

PAGE = """<html><head><base href="https://news.example/section/"></head><body>
<a href="story-1.html">Story &amp; one</a>
<a href="/story-2.html#comments">  Story
 two </a>
<a href="story-1.html">Duplicate</a>
<a href="mailto:desk@news.example">Mail</a>
<a href="javascript:void(0)">Script</a>
<a href="https://other.example/story-3.html" title="Three">  </a>
<a>no href</a>
</body></html>"""


def test_links_matching_the_pattern_with_text_as_title():
    entries = extract_links(PAGE, "https://news.example/section/", r"story-\d+\.html$")
    assert entries == [
        {"url": "https://news.example/section/story-1.html", "title": "Story & one"},
        {"url": "https://news.example/story-2.html", "title": "Story two"},
        {"url": "https://other.example/story-3.html", "title": "Three"},
    ]


def test_an_empty_pattern_keeps_links_to_the_same_site():
    entries = extract_links(PAGE, "https://news.example/section/", "")
    assert [e["url"] for e in entries] == [
        "https://news.example/section/story-1.html",
        "https://news.example/story-2.html",
    ]


def test_a_bad_pattern_is_a_clear_error():
    with pytest.raises(BadPattern, match="not a valid regular expression"):
        extract_links(PAGE, "https://news.example/", "([a-z")


def test_broken_html_still_yields_links():
    html = '<div><a href="/a">A<p>unclosed <a href="/b">B'
    entries = extract_links(html, "https://x.example/", "")
    assert [e["title"] for e in entries] == ["A unclosed", "B"]


@pytest.mark.parametrize(
    "content_type,body,expected",
    [
        ("text/html", b"<rss/>", True),
        ("application/xml", b"\n  <!DOCTYPE html><html>", True),
        ("", b"<html><body>", True),
        ("application/rss+xml", b"<?xml version='1.0'?><rss/>", False),
        ("application/json", b'{"version": "https://jsonfeed.org/version/1"}', False),
    ],
)
def test_html_where_a_feed_was_expected_is_recognised(content_type, body, expected):
    assert looks_like_html(content_type, body) is expected


INTERVAL = timedelta(minutes=30)


@pytest.mark.parametrize(
    "errors,wait",
    [
        (1, timedelta(minutes=30)),
        (2, timedelta(hours=1)),
        (3, timedelta(hours=2)),
        (6, timedelta(hours=16)),
        (7, timedelta(hours=24)),
        (50, timedelta(hours=24)),
        (10_000, timedelta(hours=24)),
    ],
)
def test_backoff_doubles_from_the_interval_and_caps_at_a_day(errors, wait):
    assert backoff(errors, INTERVAL) == wait


def test_retry_after_wins_when_later_than_the_backoff():
    now = datetime(2026, 1, 1, tzinfo=UTC)
    later = now + timedelta(hours=5)
    assert next_attempt(now, 1, INTERVAL, later) == later
    assert next_attempt(now, 1, INTERVAL, now + timedelta(minutes=1)) == now + INTERVAL
    assert next_attempt(now, 2, INTERVAL) == now + timedelta(hours=1)
