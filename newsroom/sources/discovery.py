"""Feed discovery: from a site or feed URL to the feeds a reader can subscribe to.

Pure: no Django. The network is a `fetch(url)` callable passed in, so the views
use the safe fetcher and the tests can use anything that speaks to loopback.
Order of search: the URL itself (a feed is added as it is), then the page's
`<link rel="alternate">` tags of feed types, then the usual feed paths.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Protocol
from urllib.parse import urljoin, urlsplit, urlunsplit

FEED_TYPES = {
    "application/rss+xml": "RSS",
    "application/atom+xml": "Atom",
    "application/rdf+xml": "RDF",
    "application/feed+json": "JSON Feed",
    "application/json": "JSON Feed",
    "application/x.atom+xml": "Atom",
    "application/x-atom+xml": "Atom",
    "text/xml": "RSS",
    "application/xml": "RSS",
}
COMMON_PATHS = ("feed", "rss.xml", "atom.xml", "index.xml", "feed.xml")
HTML_TYPES = ("text/html", "application/xhtml+xml")


class Fetched(Protocol):
    url: str
    status: int
    content_type: str
    body: bytes


class FetchFailed(Exception):
    """The fetch callable could not get the page; str() is the reader's message."""


Fetch = Callable[[str], Fetched]


@dataclass(frozen=True)
class FoundFeed:
    url: str
    title: str = ""
    format: str = ""


@dataclass
class Discovery:
    """What a URL leads to.

    `direct` is True when the URL itself is a feed (then `feeds` holds only it).
    `feeds` empty means nothing was found and `message` says why.
    """

    url: str
    feeds: list[FoundFeed] = field(default_factory=list)
    direct: bool = False
    message: str = ""


class InvalidURL(ValueError):
    pass


def normalise_url(raw: str) -> str:
    """A pasted address as an absolute http(s) URL; a bare host gets https://."""
    text = raw.strip()
    if not text:
        raise InvalidURL("Enter a web address.")
    if "://" not in text:
        text = "https://" + text.lstrip("/")
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https"):
        raise InvalidURL(
            f"Only http and https addresses can be fetched, not {parts.scheme}."
        )
    if not parts.hostname:
        raise InvalidURL(f"{raw.strip()!r} has no host name.")
    if any(ch.isspace() for ch in text):
        raise InvalidURL("A web address cannot contain spaces.")
    path = parts.path or "/"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


class _LinkParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.base: str | None = None
        self.links: list[dict[str, str]] = []
        self.in_body = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k.lower(): (v or "") for k, v in attrs}
        if tag == "base" and self.base is None and values.get("href"):
            self.base = values["href"].strip()
        elif tag == "link":
            self.links.append(values)
        elif tag == "body":
            self.in_body = True

    handle_startendtag = handle_starttag


def feed_links(html: str, page_url: str) -> list[FoundFeed]:
    """Feeds that a page announces with `<link rel="alternate" type=...>`, in page order."""
    parser = _LinkParser()
    try:
        parser.feed(html)
        parser.close()
    except Exception:  # a broken page still gives whatever was parsed before it broke
        pass
    base = urljoin(page_url, parser.base) if parser.base else page_url
    found: list[FoundFeed] = []
    seen: set[str] = set()
    for attrs in parser.links:
        rels = attrs.get("rel", "").lower().split()
        mime = attrs.get("type", "").split(";")[0].strip().lower()
        href = attrs.get("href", "").strip()
        if "alternate" not in rels or mime not in FEED_TYPES or not href:
            continue
        url = urljoin(base, href)
        if urlsplit(url).scheme not in ("http", "https") or url in seen:
            continue
        seen.add(url)
        found.append(
            FoundFeed(
                url=url, title=attrs.get("title", "").strip(), format=FEED_TYPES[mime]
            )
        )
    return found


def common_feed_urls(page_url: str) -> list[str]:
    """The usual feed addresses: beside the page's folder first, then at the site root."""
    parts = urlsplit(page_url)
    root = f"{parts.scheme}://{parts.netloc}/"
    folders = [root]
    path = parts.path or "/"
    folder = path if path.endswith("/") else path.rsplit("/", 1)[0] + "/"
    if folder != "/":
        folders.insert(0, urljoin(root, folder))
    urls: list[str] = []
    for base in folders:
        for name in COMMON_PATHS:
            url = urljoin(base, name)
            if url not in urls:
                urls.append(url)
    return urls


def sniff_feed(body: bytes, content_type: str = "") -> FoundFeed | None:
    """The feed in a response body (format and title), or None when it is not a feed.

    Only bytes go to feedparser, never a URL, so it cannot fetch anything itself.
    """
    head = body[:2048].lstrip(b"\xef\xbb\xbf \t\r\n")
    mime = content_type.split(";")[0].strip().lower()
    if head.startswith(b"{") or mime.endswith("json"):
        return _sniff_json_feed(body)
    if not head.startswith(b"<"):
        return None
    lowered = head[:512].lower()
    if lowered.startswith(b"<!doctype html") or lowered.startswith(b"<html"):
        return None
    import feedparser

    parsed = feedparser.parse(body)
    version = parsed.get("version") or ""
    if not version:
        return None
    title = parsed.feed.get("title", "") if parsed.get("feed") else ""
    if version.startswith("atom"):
        fmt = "Atom"
    elif version in ("rss10", "rss090"):  # RSS 1.0 and 0.90 are RDF documents
        fmt = "RDF"
    elif version.startswith("json"):
        fmt = "JSON Feed"
    else:
        fmt = "RSS"
    return FoundFeed(url="", title=str(title).strip(), format=fmt)


def _sniff_json_feed(body: bytes) -> FoundFeed | None:
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict):
        return None
    version = data.get("version")
    if not (
        isinstance(version, str) and version.startswith("https://jsonfeed.org/version/")
    ):
        return None
    title = data.get("title")
    return FoundFeed(
        url="",
        title=title.strip() if isinstance(title, str) else "",
        format="JSON Feed",
    )


def is_html(fetched: Fetched) -> bool:
    mime = (fetched.content_type or "").split(";")[0].strip().lower()
    if mime in HTML_TYPES:
        return True
    if mime and mime not in ("text/plain", "application/octet-stream"):
        return False
    # Servers that send no type (or a generic one) get a look at the first bytes.
    head = fetched.body[:1024].lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html", b"<head"))


def _decode(fetched: Fetched) -> str:
    charset = getattr(fetched, "charset", None) or "utf-8"
    try:
        return fetched.body.decode(charset, errors="replace")
    except LookupError:  # an unknown charset name from the server
        return fetched.body.decode("utf-8", errors="replace")


def discover(
    raw_url: str, fetch: Fetch, *, probe_common_paths: bool = True
) -> Discovery:
    """Find the feeds behind a URL.

    Raises InvalidURL for an address that cannot be fetched at all. Every other
    failure comes back as a Discovery with no feeds and a message for the reader.
    """
    url = normalise_url(raw_url)
    try:
        page = fetch(url)
    except FetchFailed as e:
        return Discovery(url=url, message=f"Could not fetch {url}: {e}")
    if page.status >= 400:
        return Discovery(url=url, message=f"{url} answered with HTTP {page.status}.")
    final_url = page.url or url

    feed = sniff_feed(page.body, page.content_type)
    if feed is not None:
        return Discovery(
            url=final_url,
            direct=True,
            feeds=[FoundFeed(final_url, feed.title, feed.format)],
        )
    if not is_html(page):
        shown = (page.content_type or "no content type").split(";")[0]
        return Discovery(
            url=final_url,
            message=f"{final_url} is neither a web page nor a feed (it is {shown}).",
        )

    announced = feed_links(_decode(page), final_url)
    if announced:
        return Discovery(url=final_url, feeds=announced)
    if not probe_common_paths:
        return Discovery(url=final_url, message=_none_found(final_url, probed=False))

    found: list[FoundFeed] = []
    seen: set[str] = set()
    for candidate in common_feed_urls(final_url):
        try:
            answer = fetch(candidate)
        except FetchFailed:
            continue
        if answer.status >= 400:
            continue
        sniffed = sniff_feed(answer.body, answer.content_type)
        target = answer.url or candidate
        if sniffed is None or target in seen:
            continue
        seen.add(target)
        found.append(FoundFeed(target, sniffed.title, sniffed.format))
    if found:
        return Discovery(url=final_url, feeds=found)
    return Discovery(url=final_url, message=_none_found(final_url, probed=True))


def _none_found(url: str, *, probed: bool) -> str:
    tried = (
        " or at the usual addresses (/feed, /rss.xml, /atom.xml, /index.xml, /feed.xml)"
    )
    return (
        f"No feed found: {url} announces no RSS, Atom or JSON feed"
        f"{tried if probed else ''}. Paste the feed's own address, or add the page "
        "as a scraped page with a link pattern."
    )
