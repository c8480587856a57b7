"""Feed HTML made safe to show, and its plain text. Pure: imports no Django.

nh3 (ammonia) does the sanitizing: an allow-list of tags and attributes, so
anything it does not know (script, iframe, object, embed, form, svg, event
handlers, style attributes) is dropped. URL schemes are an allow-list too, so
javascript:, vbscript: and data: never survive in href or src. Relative URLs are
resolved against the entry's base; with no usable base they are dropped, since
left alone they would point into Newsroom itself.
"""

from __future__ import annotations

import html as htmllib
import re
from functools import lru_cache
from urllib.parse import urlsplit

import nh3

SAFE_URL_SCHEMES = frozenset({"http", "https", "mailto", "ftp", "tel"})

# Dropped with everything inside them: their text is code, not prose.
_DROP_WITH_CONTENT = frozenset(
    {
        "script",
        "style",
        "iframe",
        "object",
        "embed",
        "applet",
        "noscript",
        "template",
        "svg",
        "math",
        "frame",
        "frameset",
        "noembed",
        "noframes",
        "xmp",
    }
)
# ammonia's defaults minus a few that only make sense inside a page's layout.
_TAGS = frozenset(nh3.ALLOWED_TAGS) - {"map", "area", "nav", "header", "footer"}


@lru_cache(maxsize=4096)  # bases repeat for every entry of a feed
def is_absolute_http(url: str) -> bool:
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.netloc)


@lru_cache(maxsize=512)
def _cleaner(base: str) -> nh3.Cleaner:
    # One cleaner per base URL: feeds mostly share one base, so the cache hits,
    # and resolving in Rust beats a Python callback per attribute.
    relative = ("rewrite_with_base", base) if is_absolute_http(base) else "deny"
    return nh3.Cleaner(
        tags=set(_TAGS),
        clean_content_tags=set(_DROP_WITH_CONTENT),
        url_schemes=set(SAFE_URL_SCHEMES),
        url_relative=relative,
        link_rel="noopener noreferrer",
        strip_comments=True,
    )


def clean_html(html: str, base: str = "") -> str:
    """Sanitized HTML: only harmless tags and attributes, absolute safe URLs."""
    if not html:
        return ""
    return _cleaner(base).clean(html.replace("\x00", "")).strip()


# Lookahead only, so the replacement is a literal " <" (no template to expand).
_BLOCK = re.compile(
    r"<(?=/?(?:p|div|br|li|ul|ol|h[1-6]|tr|td|th|table|blockquote|pre|dd|dt|hr"
    r"|figure|figcaption|section|article)\b)",
    re.IGNORECASE,
)
# A tag as the sanitizer writes it: attribute values double-quoted, and text
# never holds a raw "<" or ">" (they are escaped), so this cannot cut a tag short.
# Written as runs of ordinary characters between quoted values (the "unrolled
# loop"), which the regex engine takes a run at a time instead of one
# alternation per character: half the time of `<(?:[^">]|"[^"]*")*>`.
_TAG = re.compile(r'<[^">]*(?:"[^"]*"[^">]*)*>')
_SPACES = re.compile(r"\s+")
_TEXT_ONLY = nh3.Cleaner(tags=set(), clean_content_tags=set(_DROP_WITH_CONTENT))


def html_to_text(html: str) -> str:
    """Plain text of an HTML fragment, whitespace collapsed to single spaces."""
    if not html:
        return ""
    # A space before each block boundary keeps "<p>a</p><p>b</p>" as "a b".
    spaced = _BLOCK.sub(" <", html.replace("\x00", ""))
    text = htmllib.unescape(_TEXT_ONLY.clean(spaced))
    return _SPACES.sub(" ", text).strip()


def sanitized_html_to_text(html: str) -> str:
    """html_to_text for output of clean_html: a regular expression is enough
    there, and costs a fraction of a second sanitizing pass."""
    if not html:
        return ""
    text = _TAG.sub("", _BLOCK.sub(" <", html))
    if "&" in text:  # most entries have no entity left once the tags are gone
        text = htmllib.unescape(text)
    # str.split() and the regex's \s agree on what is whitespace (both ask
    # Py_UNICODE_ISSPACE); splitting skips the regex machinery.
    return " ".join(text.split())


def text_to_html(text: str) -> str:
    """HTML for plain text: escaped, paragraphs kept, nothing interpreted."""
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", text.replace("\x00", ""))]
    return "".join(
        "<p>" + htmllib.escape(p).replace("\n", "<br>") + "</p>"
        for p in paragraphs
        if p
    )
