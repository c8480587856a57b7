"""Links out of a scraped or rendered page, as journal entries. Pure: no Django.

A scrape source names a regular expression; every link on the page whose
absolute URL matches it becomes an entry titled with the link's text. The
result is the body of a `scrape`/`browser` delivery (see fold_app.journal).
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from urllib.parse import urldefrag, urljoin, urlsplit

LINKS_CONTENT_TYPE = "application/x-newsroom-links+json"
MAX_ENTRIES = 2000  # a page with more links than this is a sitemap, not a front page
MAX_TITLE = 500


_BREAKS = frozenset(
    "p div br li h1 h2 h3 h4 h5 h6 td th section article header footer figcaption".split()
)


class BadPattern(Exception):
    """The source's link pattern is not a valid regular expression."""


class _Links(HTMLParser):
    def __init__(self, base_url: str) -> None:
        super().__init__(convert_charrefs=True)
        self.base_url = base_url
        self.links: list[tuple[str, str]] = []
        self._href: str | None = None
        self._fallback = ""
        self._text: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "base" and attrs.get("href") and not self.links:
            self.base_url = urljoin(self.base_url, attrs["href"])
        elif tag == "a":
            self._close()
            self._href = attrs.get("href")
            self._fallback = attrs.get("title") or ""
            self._text = []
        elif tag == "img" and self._href is not None and not self._fallback:
            self._fallback = attrs.get("alt") or ""
        elif tag in _BREAKS and self._href is not None:
            self._text.append(" ")  # "<h3>Title</h3><p>Teaser" reads as two words

    def handle_endtag(self, tag):
        if tag == "a":
            self._close()

    def handle_data(self, data):
        if self._href is not None:
            self._text.append(data)

    def close(self):
        super().close()
        self._close()

    def _close(self):
        if self._href is not None:
            text = " ".join("".join(self._text).split()) or " ".join(
                self._fallback.split()
            )
            self.links.append((self._href, text[:MAX_TITLE]))
        self._href = None


def compile_pattern(pattern: str) -> re.Pattern[str] | None:
    if not pattern.strip():
        return None
    try:
        return re.compile(pattern)
    except re.error as e:
        raise BadPattern(
            f"the link pattern is not a valid regular expression ({e})"
        ) from None


def extract_links(html: str, page_url: str, pattern: str) -> list[dict[str, str]]:
    """Entries {"url", "title"} for the page's links matching `pattern`, in page
    order, each URL once. An empty pattern keeps links to the page's own site.
    Raises BadPattern."""
    regex = compile_pattern(pattern)
    parser = _Links(page_url)
    parser.feed(html)
    parser.close()
    page_host = urlsplit(page_url).hostname
    page = urldefrag(page_url).url
    entries: dict[str, dict[str, str]] = {}
    for href, text in parser.links:
        href = (href or "").strip()
        if not href:
            continue
        url = urldefrag(urljoin(parser.base_url, href)).url
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or url == page:
            continue
        if regex is None:
            if parts.hostname != page_host:
                continue
        elif not regex.search(url):
            continue
        entry = entries.get(url)
        if entry is None:
            entries[url] = {"url": url, "title": text}
            if len(entries) >= MAX_ENTRIES:
                break
        elif not entry["title"] and text:
            entry["title"] = text  # an image link first, its text link later
    return list(entries.values())


def links_body(page_url: str, entries: list[dict[str, str]]) -> bytes:
    return json.dumps(
        {"page_url": page_url, "entries": entries}, ensure_ascii=False
    ).encode("utf-8")


def looks_like_html(content_type: str, body: bytes) -> bool:
    """True for an HTML page (where a feed was expected, say)."""
    if content_type in ("text/html", "application/xhtml+xml"):
        return True
    head = body[:512].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    return head.startswith((b"<!doctype html", b"<html"))
