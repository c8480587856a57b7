"""Delivery bodies to raw entries: RSS/Atom/RDF/CDF, JSON Feed, and link lists.

Pure: imports no Django. feedparser only ever gets the bytes, wrapped in a
BytesIO: given a bare bytes or str it may open a URL or a file named by the body.
Its own sanitizer and URL rewriting are off because nh3 does both (see
sanitize.py) and running both would parse every entry's HTML twice.
"""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime

import feedparser

LINKS_CONTENT_TYPE = "application/x-newsroom-links+json"
JSON_FEED_VERSION_PREFIX = "https://jsonfeed.org/version/1"

# feedparser flags these as bozo although the document parsed completely.
_HARMLESS_BOZO = ("CharacterEncodingOverride", "NonXMLContentType")


@dataclass
class RawEntry:
    """One entry as the source wrote it; normalize.py turns it into a version."""

    guid: str = ""
    url: str = ""
    title: str = ""
    title_is_html: bool = False
    author: str = ""
    published: datetime | None = None
    content: str = ""
    content_is_html: bool = True
    base: str = ""


@dataclass
class ParseResult:
    """entries: what was read. error: why nothing could be read (None if the body
    was a feed). notes: problems that did not stop the read (bozo, skipped)."""

    entries: list[RawEntry] = field(default_factory=list)
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    format: str = ""
    # Why the document is not well-formed, when its entries were read anyway: if
    # none of them turns out to hold anything, the feed counts as unreadable.
    broken: str = ""


def parse_body(
    body: bytes | None, content_type: str = "", kind: str = "feed", url: str = ""
) -> ParseResult:
    """Read a delivery body in the format its kind and content type say."""
    if body is None:
        return ParseResult(
            error="The body of this delivery is gone (pruned); it cannot be read."
        )
    if not body.strip():
        return ParseResult(error="The response was empty.")
    media_type = content_type.split(";", 1)[0].strip().lower()
    if kind in ("scrape", "browser") or media_type == LINKS_CONTENT_TYPE:
        return parse_links(body)
    if _looks_like_json(body, media_type):
        return parse_json_feed(body, url)
    return parse_feed(body, content_type, url)


def _looks_like_json(body: bytes, media_type: str) -> bool:
    if media_type.endswith("json"):
        return True
    head = body[:64].lstrip(b"\xef\xbb\xbf \t\r\n")
    return head.startswith((b"{", b"["))


# --- RSS, Atom, RDF, CDF ----------------------------------------------------------


def run_feedparser(body: bytes, content_type: str = "", url: str = ""):
    """feedparser on the bytes alone, exactly as the fold calls it."""
    headers = {}
    if content_type:
        headers["content-type"] = content_type
    if url:
        headers["content-location"] = url
    return feedparser.parse(
        io.BytesIO(body),
        response_headers=headers,
        sanitize_html=False,
        resolve_relative_uris=False,
    )


def parse_feed(body: bytes, content_type: str = "", url: str = "") -> ParseResult:
    parsed = run_feedparser(body, content_type, url)
    result = ParseResult(format=parsed.get("version") or "feed")
    feed_base = url or parsed.feed.get("link", "")
    for entry in parsed.entries:
        result.entries.append(_feedparser_entry(entry, feed_base))

    bozo = parsed.get("bozo_exception") if parsed.get("bozo") else None
    harmless = bozo is not None and type(bozo).__name__ in _HARMLESS_BOZO
    if bozo is not None and not harmless:
        result.broken = _describe(bozo)
    if result.entries:
        if result.broken:
            result.notes.append(
                f"The feed is not well-formed ({result.broken}); "
                f"its {len(result.entries)} entries were read anyway."
            )
        return result

    recognised = bool(parsed.get("version")) or bool(parsed.feed)
    if _looks_like_html(body, content_type) and not parsed.get("version"):
        result.error = "This is an HTML page, not a feed." + _advertised_feed(body, url)
    elif not recognised:
        result.error = (
            "This is not a feed: no RSS, Atom, RDF, CDF or JSON Feed was found in it."
        )
    elif result.broken:
        result.error = f"This feed cannot be read: {result.broken}."
    else:
        result.notes.append("The feed has no entries.")
    return result


def _feedparser_entry(entry, feed_base: str) -> RawEntry:
    # dict.get, not entry.get: FeedParserDict's own lookup runs its key aliases
    # on every call, and these are the keys feedparser actually stores.
    get = dict.get
    raw = RawEntry(
        guid=str(get(entry, "id") or "").strip(),
        url=str(get(entry, "link") or "").strip(),
        author=str(get(entry, "author") or "").strip(),
        published=_struct_time(
            get(entry, "published_parsed") or get(entry, "updated_parsed")
        ),
        base=feed_base,
    )
    title = get(entry, "title_detail")
    if title is not None:
        raw.title = get(title, "value") or ""
        raw.title_is_html = "html" in (get(title, "type") or "")
    body = _best_content(entry)
    if body is not None:
        raw.content = get(body, "value") or ""
        raw.content_is_html = "html" in (get(body, "type") or "text/html")
        raw.base = get(body, "base") or raw.url or feed_base
    return raw


def _best_content(entry):
    # Full content beats the summary; among several, the longest HTML one.
    get = dict.get
    contents = [c for c in get(entry, "content") or [] if get(c, "value")]
    if contents:
        return max(
            contents,
            key=lambda c: ("html" in (get(c, "type") or ""), len(get(c, "value"))),
        )
    summary = get(entry, "summary_detail")
    if summary is not None and get(summary, "value"):
        return summary
    return None


def _struct_time(value) -> datetime | None:
    if not value:
        return None
    try:
        # feedparser gives UTC; a leap second (60) is not a datetime.
        return datetime(*value[:5], min(value[5], 59), tzinfo=UTC)
    except (TypeError, ValueError, OverflowError):
        return None


def _describe(exc: BaseException) -> str:
    message = str(exc) or type(exc).__name__
    line = getattr(exc, "getLineNumber", None)
    if callable(line):
        try:
            message += f" at line {line()}"
        except Exception:  # noqa: BLE001 - a location is a courtesy, never a failure
            pass
    return message


_HTML_START = re.compile(
    rb"^\s*(<!--.*?-->\s*)*<(!doctype\s+html|html|head|body)\b",
    re.IGNORECASE | re.DOTALL,
)
_FEED_LINK = re.compile(
    rb"<link\b[^>]*type=[\"']application/(?:rss|atom|feed)\+(?:xml|json)[\"'][^>]*>",
    re.IGNORECASE,
)
_HREF = re.compile(rb"href=[\"']([^\"']+)[\"']", re.IGNORECASE)


def _looks_like_html(body: bytes, content_type: str) -> bool:
    head = body[:4096].lstrip(b"\xef\xbb\xbf")
    return "html" in content_type.lower() or bool(_HTML_START.match(head))


def _advertised_feed(body: bytes, url: str) -> str:
    # Most sites name their feed in the page head: saying where saves a search.
    from urllib.parse import urljoin

    tag = _FEED_LINK.search(body[:200_000])
    href = _HREF.search(tag.group(0)) if tag else None
    if not href:
        return ""
    target = urljoin(url, href.group(1).decode("utf-8", "replace").strip())
    return f" It names a feed at {target}: use that address instead."


# --- JSON Feed 1 / 1.1 ---------------------------------------------------------


def parse_json_feed(body: bytes, url: str = "") -> ParseResult:
    try:
        doc = json.loads(body.decode("utf-8-sig"))
    except UnicodeDecodeError:
        return ParseResult(error="This JSON Feed is not UTF-8 text.")
    except ValueError as e:
        return ParseResult(error=f"This is not valid JSON: {e}.")
    version = doc.get("version") if isinstance(doc, dict) else None
    if not isinstance(version, str) or not version.startswith(JSON_FEED_VERSION_PREFIX):
        return ParseResult(
            error="This is JSON, but not a JSON Feed (no jsonfeed.org version 1 or 1.1)."
        )
    items = doc.get("items")
    if not isinstance(items, list):
        return ParseResult(error="This JSON Feed has no list of items.")
    result = ParseResult(format="json" + version.rsplit("/", 1)[-1])
    feed_base = _str(doc.get("home_page_url")) or _str(doc.get("feed_url")) or url
    feed_author = _json_author(doc)
    skipped = 0
    for item in items:
        if not isinstance(item, dict):
            skipped += 1
            continue
        result.entries.append(_json_entry(item, feed_base, feed_author))
    if skipped:
        result.notes.append(f"{skipped} items were not JSON objects and were skipped.")
    if not result.entries:
        result.notes.append("The feed has no entries.")
    return result


def _json_entry(item: dict, feed_base: str, feed_author: str) -> RawEntry:
    # The spec requires id; version 1 feeds sometimes give a number.
    guid = item.get("id")
    raw = RawEntry(
        guid=str(guid).strip()
        if isinstance(guid, (str, int, float)) and guid != ""
        else "",
        url=_str(item.get("url")) or _str(item.get("external_url")),
        title=_str(item.get("title")),
        author=_json_author(item) or feed_author,
        published=parse_iso_datetime(
            _str(item.get("date_published")) or _str(item.get("date_modified"))
        ),
        base=feed_base,
    )
    if _str(item.get("content_html")):
        raw.content = _str(item.get("content_html"))
    elif _str(item.get("content_text")):
        raw.content, raw.content_is_html = _str(item.get("content_text")), False
    elif _str(item.get("summary")):
        raw.content, raw.content_is_html = _str(item.get("summary")), False
    return raw


def _json_author(obj: dict) -> str:
    authors = obj.get("authors")  # 1.1
    if isinstance(authors, list):
        names = [_str(a.get("name")) for a in authors if isinstance(a, dict)]
        return ", ".join(n for n in names if n)
    author = obj.get("author")  # 1.0
    return _str(author.get("name")) if isinstance(author, dict) else ""


def _str(value) -> str:
    return value.strip() if isinstance(value, str) else ""


def parse_iso_datetime(value: str) -> datetime | None:
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    return (
        parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
    )


# --- Link lists (scrape and browser deliveries) ----------------------------------


def parse_links(body: bytes) -> ParseResult:
    """`{"page_url": str, "entries": [{"url", "title", "summary"?, "published"?}]}`."""
    try:
        doc = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        return ParseResult(error=f"This link list is not valid UTF-8 JSON: {e}.")
    if not isinstance(doc, dict) or not isinstance(doc.get("entries"), list):
        return ParseResult(error='This link list has no "entries" list.')
    page_url = _str(doc.get("page_url"))
    result = ParseResult(format="links")
    skipped = 0
    for entry in doc["entries"]:
        url = _str(entry.get("url")) if isinstance(entry, dict) else ""
        if not url:
            skipped += 1
            continue
        result.entries.append(
            RawEntry(
                url=url,
                title=_str(entry.get("title")),
                content=_str(entry.get("summary")),
                content_is_html=False,
                published=parse_iso_datetime(_str(entry.get("published"))),
                base=page_url,
            )
        )
    if skipped:
        result.notes.append(f"{skipped} links had no URL and were skipped.")
    if not result.entries:
        result.notes.append("The page had no matching links.")
    return result
