"""Small feed builders for the fold tests."""

from __future__ import annotations

from xml.sax.saxutils import escape

RSS_TYPE = "application/rss+xml; charset=utf-8"


def rss(*entries: dict, link: str = "https://ex.org/") -> bytes:
    """An RSS 2.0 body; each entry dict may have guid, title, link, html, date, author."""
    items = []
    for e in entries:
        parts = []
        for tag, name in (
            ("guid", "guid"),
            ("title", "title"),
            ("link", "link"),
            ("author", "author"),
            ("pubDate", "date"),
        ):
            if e.get(name):
                parts.append(f"<{tag}>{escape(e[name])}</{tag}>")
        if e.get("html"):
            parts.append(f"<description>{escape(e['html'])}</description>")
        items.append("<item>" + "".join(parts) + "</item>")
    return (
        f'<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel><title>Feed</title>'
        f"<link>{link}</link>{''.join(items)}</channel></rss>"
    ).encode()
