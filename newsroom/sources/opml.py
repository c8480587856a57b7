"""OPML: reading a subscription list into plain records, and writing one.

Pure: no Django. Reading is all or nothing: any problem raises OpmlError with a
message that says what is wrong, before anything is stored. XML is parsed with
defusedxml and DTDs are refused, so entity bombs and external entities never
expand.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

import defusedxml.ElementTree as SafeET
from defusedxml import DefusedXmlException

MAX_BYTES = 5 * 1024 * 1024
MAX_OUTLINES = 10_000
MAX_DEPTH = 20
MAX_CATEGORY_NAME = 100
MAX_URL = 2000
MAX_TITLE = 300
KINDS = ("feed", "scrape", "browser")
# Our own attributes, so scraped and browser pages survive an export/import.
KIND_ATTR = "newsroomKind"
PATTERN_ATTR = "newsroomLinkPattern"
CATEGORY_SEPARATOR = " / "


class OpmlError(ValueError):
    """The file cannot be imported; str() says what is wrong, for the reader."""


@dataclass(frozen=True)
class OpmlFeed:
    url: str
    title: str = ""
    site_url: str = ""
    category: str = ""  # "" means uncategorised
    kind: str = "feed"
    link_pattern: str = ""


@dataclass(frozen=True)
class OpmlCategory:
    name: str
    description: str = ""


@dataclass
class OpmlDocument:
    title: str
    categories: list[OpmlCategory]  # in file order, each once
    feeds: list[OpmlFeed]


def parse_opml(data: bytes) -> OpmlDocument:
    """Every feed in an OPML file with its category.

    Outlines without xmlUrl that contain outlines are folders; nested folders
    become one category named by the path ("News / Europe"). Raises OpmlError.
    """
    if len(data) > MAX_BYTES:
        raise OpmlError(
            f"The file is {len(data) / 1024 / 1024:.1f} MB; OPML files up to "
            f"{MAX_BYTES // 1024 // 1024} MB can be imported."
        )
    if not data.strip():
        raise OpmlError("The file is empty.")
    try:
        root = SafeET.fromstring(data, forbid_dtd=True)
    except DefusedXmlException:
        raise OpmlError(
            "The file declares a DTD or entities, which OPML never needs; it was refused "
            "to keep entity expansion attacks out."
        ) from None
    except ET.ParseError as e:
        raise OpmlError(f"The file is not well-formed XML ({e}).") from None
    if _local(root.tag) != "opml":
        raise OpmlError(
            f"The file is XML but not OPML: its root element is <{_local(root.tag)}>."
        )
    body = _child(root, "body")
    if body is None:
        raise OpmlError("The OPML file has no <body>, so it lists no feeds.")
    head = _child(root, "head")
    title_el = _child(head, "title") if head is not None else None
    title = (title_el.text or "").strip() if title_el is not None else ""

    feeds: list[OpmlFeed] = []
    categories: dict[str, OpmlCategory] = {}
    count = 0

    def walk(element: ET.Element, path: list[str], depth: int) -> None:
        nonlocal count
        if depth > MAX_DEPTH:
            raise OpmlError(f"Outlines are nested more than {MAX_DEPTH} deep.")
        for outline in element:
            if _local(outline.tag) != "outline":
                continue
            count += 1
            if count > MAX_OUTLINES:
                raise OpmlError(
                    f"The file has more than {MAX_OUTLINES:,} outlines; split it into "
                    "smaller files."
                )
            attrs = outline.attrib
            label = (attrs.get("title") or attrs.get("text") or "").strip()
            xml_url = (attrs.get("xmlUrl") or attrs.get("xmlurl") or "").strip()
            children = [c for c in outline if _local(c.tag) == "outline"]
            where = f"outline {count}" + (f" ({label!r})" if label else "")
            if xml_url:
                feeds.append(_feed(attrs, xml_url, label, path, where))
                if children:
                    walk(outline, path, depth + 1)
            elif children:
                if not label:
                    raise OpmlError(f"{_cap(where)} is a folder without a name.")
                name = CATEGORY_SEPARATOR.join([*path, label])
                if len(name) > MAX_CATEGORY_NAME:
                    raise OpmlError(
                        f"The folder name {name!r} is longer than {MAX_CATEGORY_NAME} characters."
                    )
                categories.setdefault(
                    name, OpmlCategory(name, (attrs.get("description") or "").strip())
                )
                walk(outline, [*path, label], depth + 1)
            else:
                raise OpmlError(
                    f"{_cap(where)} has no xmlUrl: every outline must be a feed "
                    "(with an xmlUrl attribute) or a folder of feeds."
                )

    walk(body, [], 1)
    return OpmlDocument(title=title, categories=list(categories.values()), feeds=feeds)


def _feed(
    attrs: dict[str, str], url: str, label: str, path: list[str], where: str
) -> OpmlFeed:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise OpmlError(
            f"{_cap(where)} has xmlUrl {url!r}, which is not an http(s) address."
        )
    if len(url) > MAX_URL:
        raise OpmlError(
            f"{_cap(where)} has an xmlUrl longer than {MAX_URL} characters."
        )
    kind = (attrs.get(KIND_ATTR) or "feed").strip()
    if kind not in KINDS:
        raise OpmlError(
            f"{_cap(where)} has {KIND_ATTR}={kind!r}; use one of {', '.join(KINDS)}."
        )
    site_url = (attrs.get("htmlUrl") or "").strip()
    if site_url and (
        urlsplit(site_url).scheme not in ("http", "https") or len(site_url) > MAX_URL
    ):
        site_url = ""  # only a hint for display; a bad one is dropped, not fatal
    return OpmlFeed(
        url=url,
        title=label[:MAX_TITLE],
        site_url=site_url,
        category=CATEGORY_SEPARATOR.join(path),
        kind=kind,
        link_pattern=(attrs.get(PATTERN_ATTR) or "").strip(),
    )


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _local(tag: object) -> str:
    # Namespaced OPML ("{ns}outline") is rare but legal; comments have a non-str tag.
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _child(element: ET.Element, name: str) -> ET.Element | None:
    for child in element:
        if _local(child.tag) == name:
            return child
    return None


def build_opml(
    title: str, categories: Iterable[OpmlCategory], feeds: Iterable[OpmlFeed]
) -> bytes:
    """An OPML 2.0 file: one folder per category (in the order given), loose feeds last."""
    root = ET.Element("opml", version="2.0")
    head = ET.SubElement(root, "head")
    ET.SubElement(head, "title").text = title
    body = ET.SubElement(root, "body")
    folders: dict[str, ET.Element] = {}
    for category in categories:
        attrs = {"text": category.name, "title": category.name}
        if category.description:
            attrs["description"] = category.description
        folders[category.name] = ET.SubElement(body, "outline", attrs)
    loose: list[OpmlFeed] = []
    for feed in feeds:
        if feed.category and feed.category in folders:
            _feed_outline(folders[feed.category], feed)
        else:
            loose.append(feed)
    for feed in loose:
        _feed_outline(body, feed)
    for name, folder in list(folders.items()):
        if len(folder) == 0:
            body.remove(folder)  # an empty folder would not import back (no xmlUrl)
            del folders[name]
    ET.indent(root, space="  ")
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


def _feed_outline(parent: ET.Element, feed: OpmlFeed) -> None:
    text = feed.title or feed.url
    attrs = {"type": "rss", "text": text, "title": text, "xmlUrl": feed.url}
    if feed.site_url:
        attrs["htmlUrl"] = feed.site_url
    if feed.kind != "feed":
        attrs[KIND_ATTR] = feed.kind
    if feed.link_pattern:
        attrs[PATTERN_ATTR] = feed.link_pattern
    ET.SubElement(parent, "outline", attrs)
