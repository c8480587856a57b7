"""Feed discovery: the pure parts, then whole discoveries against a local server."""

from __future__ import annotations

import pytest

from newsroom.sources.discovery import (
    InvalidURL,
    common_feed_urls,
    discover,
    feed_links,
    normalise_url,
    sniff_feed,
)
from newsroom.tests.localserver import Route, serve

RSS = b"""<?xml version="1.0"?><rss version="2.0"><channel><title>Example News</title>
<link>http://example.org/</link><item><title>One</title><link>http://example.org/1</link></item>
</channel></rss>"""
ATOM = b"""<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom">
<title>Example Atom</title><id>urn:x</id><updated>2026-01-01T00:00:00Z</updated></feed>"""
RDF = b"""<?xml version="1.0"?><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
xmlns="http://purl.org/rss/1.0/"><channel rdf:about="http://example.org/"><title>Example RDF</title>
<link>http://example.org/</link><description>d</description></channel></rdf:RDF>"""
JSON_FEED = b'{"version": "https://jsonfeed.org/version/1.1", "title": "Example JSON", "items": []}'


def page(head: str = "", body: str = "<p>Hello</p>") -> bytes:
    return f"<!doctype html><html><head><title>Site</title>{head}</head><body>{body}</body></html>".encode()


# --- pure parts ---------------------------------------------------------------


def test_feed_links_reads_alternate_links_of_feed_types_in_page_order():
    html = page(
        '<link rel="stylesheet" href="/s.css">'
        '<link rel="alternate" type="application/rss+xml" title="All posts" href="/rss">'
        '<link rel="alternate" type="application/atom+xml" href="https://other.example/atom">'
        '<link rel="alternate" type="application/feed+json" title="JSON" href="feed.json">'
        '<link rel="alternate" hreflang="fr" href="/fr/">'
        '<link rel="alternate" type="application/rss+xml" href="/rss">'
    ).decode()
    found = feed_links(html, "https://example.org/blog/post")
    assert [(f.url, f.title, f.format) for f in found] == [
        ("https://example.org/rss", "All posts", "RSS"),
        ("https://other.example/atom", "", "Atom"),
        ("https://example.org/blog/feed.json", "JSON", "JSON Feed"),
    ]


def test_feed_links_honours_base_href_and_rel_with_several_tokens():
    html = page(
        '<base href="https://cdn.example.org/site/">'
        '<LINK REL="Alternate Home" TYPE="application/rss+xml; charset=utf-8" HREF="rss.xml">'
    ).decode()
    found = feed_links(html, "https://example.org/")
    assert [f.url for f in found] == ["https://cdn.example.org/site/rss.xml"]


def test_feed_links_ignores_non_http_hrefs_and_broken_markup():
    html = (
        '<html><head><link rel=alternate type=application/rss+xml href="javascript:alert(1)">'
        "<link rel=alternate type=application/atom+xml href=/ok.atom><body><div <<<"
    )
    assert [f.url for f in feed_links(html, "http://e.org/")] == [
        "http://e.org/ok.atom"
    ]


def test_common_feed_urls_tries_the_page_folder_then_the_site_root():
    assert common_feed_urls("https://example.org/") == [
        "https://example.org/feed",
        "https://example.org/rss.xml",
        "https://example.org/atom.xml",
        "https://example.org/index.xml",
        "https://example.org/feed.xml",
    ]
    urls = common_feed_urls("https://example.org/blog/post-1")
    assert urls[:2] == [
        "https://example.org/blog/feed",
        "https://example.org/blog/rss.xml",
    ]
    assert urls[5:] == common_feed_urls("https://example.org/")


@pytest.mark.parametrize(
    ("body", "content_type", "fmt", "title"),
    [
        (RSS, "application/rss+xml", "RSS", "Example News"),
        (ATOM, "application/atom+xml", "Atom", "Example Atom"),
        (RDF, "application/rdf+xml", "RDF", "Example RDF"),
        (JSON_FEED, "application/feed+json", "JSON Feed", "Example JSON"),
        (RSS, "text/html", "RSS", "Example News"),  # servers mislabel feeds often
    ],
)
def test_sniff_feed_recognises_each_format(body, content_type, fmt, title):
    found = sniff_feed(body, content_type)
    assert found is not None
    assert (found.format, found.title) == (fmt, title)


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (page(), "text/html"),
        (b'{"version": 1, "title": "not a feed"}', "application/json"),
        (
            b"<?xml version='1.0'?><svg xmlns='http://www.w3.org/2000/svg'/>",
            "image/svg+xml",
        ),
        (b"\x89PNG\r\n\x1a\n", "image/png"),
        (b"", "text/plain"),
    ],
)
def test_sniff_feed_rejects_what_is_not_a_feed(body, content_type):
    assert sniff_feed(body, content_type) is None


def test_normalise_url_adds_https_to_a_bare_host_and_refuses_other_schemes():
    assert normalise_url("  example.org ") == "https://example.org/"
    assert normalise_url("http://example.org/a?b=1#frag") == "http://example.org/a?b=1"
    for bad in [
        "",
        "ftp://example.org/",
        "file:///etc/passwd",
        "http:///path",
        "http://a b/",
    ]:
        with pytest.raises(InvalidURL):
            normalise_url(bad)


# --- whole discoveries against a local server ------------------------------------


def test_a_url_that_is_a_feed_is_found_directly(fetch):
    with serve({"/news.xml": Route(RSS, "application/rss+xml")}) as site:
        found = discover(site.url("/news.xml"), fetch)
    assert found.direct
    assert [(f.url, f.title) for f in found.feeds] == [
        (site.url("/news.xml"), "Example News")
    ]


def test_link_tags_are_offered_without_probing_common_paths(fetch):
    head = (
        '<link rel="alternate" type="application/rss+xml" title="Posts" href="/posts.rss">'
        '<link rel="alternate" type="application/atom+xml" title="Comments" href="/c.atom">'
    )
    with serve({"/": Route(page(head))}) as site:
        found = discover(site.url("/"), fetch)
        assert site.requests == ["/"]
    assert not found.direct
    assert [(f.url, f.title) for f in found.feeds] == [
        (site.url("/posts.rss"), "Posts"),
        (site.url("/c.atom"), "Comments"),
    ]


def test_common_paths_are_probed_when_the_page_announces_nothing(fetch):
    routes = {
        "/": Route(page()),
        "/rss.xml": Route(RSS, "application/rss+xml"),
        "/atom.xml": Route(ATOM, "text/xml"),
        # An HTML page at /feed is not a feed and is not offered.
        "/feed": Route(page(), "text/html"),
    }
    with serve(routes) as site:
        found = discover(site.url("/"), fetch)
    assert [(f.url, f.format) for f in found.feeds] == [
        (site.url("/rss.xml"), "RSS"),
        (site.url("/atom.xml"), "Atom"),
    ]


def test_none_found_gives_a_message_that_says_what_was_tried(fetch):
    with serve({"/": Route(page())}) as site:
        found = discover(site.base, fetch)
        assert sorted(site.requests) == sorted(
            ["/", "/feed", "/rss.xml", "/atom.xml", "/index.xml", "/feed.xml"]
        )
    assert found.feeds == []
    assert "No feed found" in found.message
    assert "/rss.xml" in found.message


def test_a_page_that_is_not_html_is_reported_as_such(fetch):
    with serve(
        {"/logo.png": Route(b"\x89PNG\r\n\x1a\n" + b"\0" * 64, "image/png")}
    ) as site:
        found = discover(site.url("/logo.png"), fetch)
        assert site.requests == ["/logo.png"]
    assert found.feeds == []
    assert "neither a web page nor a feed" in found.message
    assert "image/png" in found.message


def test_an_error_status_is_reported_with_its_code(fetch):
    with serve({}) as site:
        found = discover(site.url("/missing"), fetch)
    assert found.feeds == []
    assert "HTTP 404" in found.message


def test_a_redirect_is_followed_and_links_resolve_against_the_final_page(fetch):
    routes = {
        "/old": Route(b"", "text/html", 301, location="/blog/"),
        "/blog/": Route(
            page('<link rel="alternate" type="application/atom+xml" href="atom">')
        ),
    }
    with serve(routes) as site:
        found = discover(site.url("/old"), fetch)
    assert [f.url for f in found.feeds] == [site.url("/blog/atom")]
