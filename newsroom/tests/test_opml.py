"""OPML parsing and writing, without a database."""

from __future__ import annotations

import pytest

from newsroom.sources import opml
from newsroom.sources.opml import (
    OpmlCategory,
    OpmlError,
    OpmlFeed,
    build_opml,
    parse_opml,
)

NESTED = b"""<?xml version="1.0" encoding="UTF-8"?>
<opml version="1.0"><head><title>My feeds</title></head><body>
  <outline text="Loose" xmlUrl="https://loose.example/rss"/>
  <outline text="News" description="Daily news">
    <outline text="Alpha" title="Alpha News" xmlUrl="https://alpha.example/feed" htmlUrl="https://alpha.example/"/>
    <outline text="Europe">
      <outline text="Beta" xmlUrl="https://beta.example/atom.xml"/>
    </outline>
  </outline>
  <outline title="Pages">
    <outline text="Gamma" xmlUrl="https://gamma.example/news" newsroomKind="scrape" newsroomLinkPattern="/news/\\d+"/>
  </outline>
</body></opml>"""


def test_nested_outlines_become_categories_named_by_their_path():
    doc = parse_opml(NESTED)
    assert doc.title == "My feeds"
    assert [c.name for c in doc.categories] == ["News", "News / Europe", "Pages"]
    assert doc.categories[0].description == "Daily news"
    assert [(f.url, f.title, f.category) for f in doc.feeds] == [
        ("https://loose.example/rss", "Loose", ""),
        ("https://alpha.example/feed", "Alpha News", "News"),
        ("https://beta.example/atom.xml", "Beta", "News / Europe"),
        ("https://gamma.example/news", "Gamma", "Pages"),
    ]
    assert doc.feeds[1].site_url == "https://alpha.example/"
    assert (doc.feeds[3].kind, doc.feeds[3].link_pattern) == ("scrape", "/news/\\d+")


def test_build_then_parse_gives_the_same_outlines():
    doc = parse_opml(NESTED)
    again = parse_opml(build_opml(doc.title, doc.categories, doc.feeds))
    # Loose feeds move after the folders; every outline keeps its folder and attributes.
    assert sorted(again.feeds, key=repr) == sorted(doc.feeds, key=repr)
    assert again.categories == doc.categories
    assert again.title == doc.title


def test_build_leaves_out_empty_folders_and_puts_loose_feeds_last():
    data = build_opml(
        "t",
        [OpmlCategory("Empty"), OpmlCategory("Full")],
        [
            OpmlFeed("https://a.example/", category=""),
            OpmlFeed("https://b.example/", category="Full"),
        ],
    )
    doc = parse_opml(data)
    assert [c.name for c in doc.categories] == ["Full"]
    assert [f.url for f in doc.feeds] == ["https://b.example/", "https://a.example/"]


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>
<opml version="2.0"><body><outline text="&lol3;" xmlUrl="https://x.example/"/></body></opml>"""
EXTERNAL = b"""<?xml version="1.0"?><!DOCTYPE opml [<!ENTITY x SYSTEM "file:///etc/passwd">]>
<opml version="2.0"><body><outline text="&x;" xmlUrl="https://x.example/"/></body></opml>"""


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"", "empty"),
        (b"this is not xml at all", "not well-formed XML"),
        (b"<opml><body><outline", "not well-formed XML"),
        (b"<rss version='2.0'><channel/></rss>", "not OPML: its root element is <rss>"),
        (b"<opml version='2.0'><head/></opml>", "no <body>"),
        (b"<opml><body><outline text='Lonely'/></body></opml>", "has no xmlUrl"),
        (
            b"<opml><body><outline xmlUrl='ftp://x.example/'/></body></opml>",
            "not an http(s) address",
        ),
        (
            b"<opml><body><outline xmlUrl='javascript:alert(1)'/></body></opml>",
            "not an http(s) address",
        ),
        (
            b"<opml><body><outline><outline xmlUrl='https://x.example/'/></outline></body></opml>",
            "folder without a name",
        ),
        (
            b"<opml><body><outline xmlUrl='https://x.example/' newsroomKind='rocket'/></body></opml>",
            "newsroomKind='rocket'",
        ),
        (BILLION_LAUGHS, "DTD"),
        (EXTERNAL, "DTD"),
    ],
)
def test_malformed_files_say_what_is_wrong(data, says):
    with pytest.raises(OpmlError) as caught:
        parse_opml(data)
    assert says in str(caught.value)


def test_outline_without_xmlurl_is_named_by_position_and_title():
    data = b"<opml><body><outline text='A' xmlUrl='https://a.example/'/><outline text='Broken'/></body></opml>"
    with pytest.raises(OpmlError, match=r"Outline 2 \('Broken'\) has no xmlUrl"):
        parse_opml(data)


def test_a_very_large_file_is_refused_before_parsing(monkeypatch):
    monkeypatch.setattr(opml, "MAX_BYTES", 1000)
    data = (
        b"<opml><body>"
        + b"<outline xmlUrl='https://x.example/'/>" * 100
        + b"</body></opml>"
    )
    with pytest.raises(OpmlError, match="can be imported"):
        parse_opml(data)


def test_too_many_outlines_are_refused(monkeypatch):
    monkeypatch.setattr(opml, "MAX_OUTLINES", 50)
    rows = b"".join(b"<outline xmlUrl='https://x.example/%d'/>" % i for i in range(51))
    with pytest.raises(OpmlError, match="more than 50 outlines"):
        parse_opml(b"<opml><body>" + rows + b"</body></opml>")


def test_deep_nesting_is_refused():
    data = (
        b"<opml><body>"
        + b"<outline text='f'>" * 30
        + b"<outline xmlUrl='https://x.example/'/>"
        + b"</outline>" * 30
        + b"</body></opml>"
    )
    with pytest.raises(OpmlError, match="nested more than"):
        parse_opml(data)


def test_namespaced_opml_and_comments_are_read():
    data = b"""<opml xmlns="http://opml.org/spec2" version="2.0"><!-- hi --><body>
    <!-- a comment --><outline text="A" xmlUrl="https://a.example/"/></body></opml>"""
    assert [f.url for f in parse_opml(data).feeds] == ["https://a.example/"]
