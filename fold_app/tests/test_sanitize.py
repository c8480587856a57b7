"""Sanitizing feed HTML: nothing script-capable survives; links are safe."""

from __future__ import annotations

import pytest

from fold_app.sanitize import (
    clean_html,
    html_to_text,
    sanitized_html_to_text,
    text_to_html,
)
from fold_app.tests.markup import unsafe_markup

BASE = "https://example.org/blog/feed.xml"

ATTACKS = {
    "script": "<p>hi</p><script>alert(1)</script>",
    "event handler": '<img src="/x.png" onerror="alert(1)"><p onclick="x()">p</p>',
    "javascript url": '<a href="javascript:alert(1)">x</a>',
    "javascript url with entities": '<a href="jav&#x09;ascript:alert(1)">x</a>',
    "javascript url upper case": '<a href="JaVaScRiPt:alert(1)">x</a>',
    "vbscript url": '<a href="vbscript:msgbox(1)">x</a>',
    "data url in img": '<img src="data:image/svg+xml;base64,PHN2Zz48L3N2Zz4=">',
    "data url in link": '<a href="data:text/html,<script>alert(1)</script>">x</a>',
    "style attribute": '<p style="background:url(javascript:alert(1))">x</p>',
    "style element": "<style>body{background:red}</style><p>x</p>",
    "iframe": '<iframe src="https://evil.example/"></iframe>',
    "object and embed": '<object data="x.swf"></object><embed src="x.swf">',
    "svg onload": '<svg onload="alert(1)"><circle r="1"/></svg>',
    "form": '<form action="https://evil.example/"><input name="q"><button>go</button></form>',
    "meta refresh": '<meta http-equiv="refresh" content="0;url=javascript:alert(1)">',
    "base href": '<base href="javascript:alert(1)//">',
    "unclosed script": "<p>a<script>alert(1)",
    "comment trick": "<!--<script>alert(1)</script>--><p>x</p>",
}


@pytest.mark.parametrize("name", ATTACKS)
def test_it_leaves_no_script_capable_markup(name):
    cleaned = clean_html(ATTACKS[name], BASE)
    assert unsafe_markup(cleaned) == [], cleaned


def test_it_keeps_ordinary_formatting():
    cleaned = clean_html(
        "<p>A <b>bold</b> and <em>calm</em> <code>x</code></p><ul><li>one</li></ul>",
        BASE,
    )
    assert (
        cleaned
        == "<p>A <b>bold</b> and <em>calm</em> <code>x</code></p><ul><li>one</li></ul>"
    )


def test_links_get_rel_noopener_noreferrer():
    assert clean_html('<a href="https://a.example/">a</a>', BASE) == (
        '<a href="https://a.example/" rel="noopener noreferrer">a</a>'
    )


def test_relative_urls_resolve_against_the_base():
    cleaned = clean_html('<a href="../post/1">p</a><img src="img.png">', BASE)
    assert 'href="https://example.org/post/1"' in cleaned
    assert 'src="https://example.org/blog/img.png"' in cleaned


def test_relative_urls_are_dropped_without_a_usable_base():
    # Left alone they would point into Newsroom itself.
    assert "href" not in clean_html('<a href="/admin/">x</a>', "")
    assert "href" not in clean_html('<a href="/admin/">x</a>', "javascript:alert(1)")


def test_plain_text_separates_blocks_and_drops_code():
    html = "<p>Tom &amp; Jerry</p><p>second<br>line</p><script>var x</script>"
    assert html_to_text(html) == "Tom & Jerry second line"


def test_text_to_html_escapes_everything():
    assert (
        text_to_html("<b>not bold</b>\n\nnext")
        == "<p>&lt;b&gt;not bold&lt;/b&gt;</p><p>next</p>"
    )


def test_the_checker_itself_finds_attacks():
    # A checker that cannot fail proves nothing: raw attacks must be flagged.
    for name, html in ATTACKS.items():
        if name in ("comment trick",):
            continue
        assert unsafe_markup(html), name


def test_text_of_sanitized_html_matches_the_general_extraction():
    samples = [
        '<p>Tom &amp; Jerry <a href="https://x.example/?a=1&amp;b=2" title="a>b">link</a></p>',
        "<ul><li>one</li><li>two</li></ul><p>&lt;script&gt; is text</p><br>end",
        '<img alt="x > y" src="https://x.example/i.png"> caption',
    ]
    for html in samples:
        cleaned = clean_html(html, BASE)
        assert sanitized_html_to_text(cleaned) == html_to_text(cleaned), cleaned
