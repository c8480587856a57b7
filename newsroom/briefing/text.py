"""Text helpers for the briefing: normalising titles and URLs, lead sentences, names.

Pure: no Django. Names come from two honest, model-free signals: capitalised
multi-word spans ("Jerome Powell", "Bank of England") and a gazetteer of
countries, capitals and major organisations shipped in data/gazetteer.json.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

GAZETTEER_PATH = Path(__file__).parent / "data" / "gazetteer.json"

# Query parameters that only track the click; two links differing only in
# these point at the same article.
_TRACKING = re.compile(r"^(utm_|fbclid$|gclid$|mc_|ref$|ref_src$|cmpid$|ocid$)")
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'”’)]?\s+(?=[\"'“‘(]?[A-Z0-9])")
# Connectors that may sit inside a name: "Bank of England", "Fed de la Paz".
_CONNECTORS = {"of", "for", "the", "and", "de", "del", "la", "von", "van", "al", "bin"}
# "Powell's Fed": a possessive ends a name.
_POSSESSIVE = re.compile(r"['’]s$")
_ABBREVIATIONS = {"Mr.", "Mrs.", "Ms.", "Dr.", "Prof.", "St.", "U.S.", "U.K.", "U.N."}


def normalise_title(title: str) -> str:
    """Lower-case words of a title without accents or punctuation; '' when empty."""
    folded = unicodedata.normalize("NFKD", title or "")
    folded = "".join(c for c in folded if not unicodedata.combining(c)).lower()
    # Feeds append the outlet: "Rates rise again - The Ledger". Drop a short tail.
    folded = re.sub(r"\s+[-|–—]\s+[^-|–—]{1,40}$", "", folded)
    return " ".join(_WORD.findall(folded))


def normalise_url(url: str) -> str:
    """Scheme-less, tracking-free, fragment-free URL for identity; '' when empty."""
    if not url:
        return ""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return ""
    host = (parts.hostname or "").lower().removeprefix("www.")
    if not host:
        return ""
    path = parts.path.rstrip("/") or "/"
    if not parts.query:
        return f"//{host}{path}"
    query = [(k, v) for k, v in parse_qsl(parts.query) if not _TRACKING.match(k)]
    return urlunsplit(("", host, path, urlencode(sorted(query)), ""))


def host_of(url: str) -> str:
    try:
        host = urlsplit(url or "").hostname or ""
    except ValueError:
        return ""
    return host.lower().removeprefix("www.")


def sentences(text: str) -> list[str]:
    """Split plain text into sentences, keeping abbreviations like 'U.S.' whole."""
    text = re.sub(r"\s+", " ", text or "").strip()
    if not text:
        return []
    pieces = _SENTENCE_END.split(text)
    out: list[str] = []
    for piece in pieces:
        if out and out[-1].split(" ")[-1] in _ABBREVIATIONS:
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    return [s.strip() for s in out if s.strip()]


def lead(text: str, limit: int = 280) -> str:
    """The first sentence of a text (cut at a word boundary past `limit`)."""
    first = next(iter(sentences(text)), "")
    if len(first) <= limit:
        return first
    return first[:limit].rsplit(" ", 1)[0] + "…"


def word_count(text: str) -> int:
    return len(_WORD.findall(text or ""))


@dataclass(frozen=True)
class Name:
    """A name found in text. kind: 'place', 'organisation' or 'actor'."""

    text: str
    kind: str


@dataclass(frozen=True)
class Gazetteer:
    lookup: dict[str, Name]  # surface form -> canonical name
    stop: frozenset[str]
    longest: int  # most words in any surface form
    starts: dict[str, int]  # first word of a surface form -> most words after it

    @classmethod
    def from_json(cls, data: dict) -> Gazetteer:
        lookup: dict[str, Name] = {}
        for country, capital in data["countries"].items():
            lookup[country] = Name(country, "place")
            # A capital stands for its government in news copy ("Paris said").
            lookup.setdefault(capital, Name(capital, "place"))
        for alias, country in data["aliases"].items():
            lookup[alias] = Name(country, "place")
        for org, aliases in data["organisations"].items():
            lookup[org] = Name(org, "organisation")
            for alias in aliases:
                lookup[alias] = Name(org, "organisation")
        longest = max(len(k.split()) for k in lookup)
        starts: dict[str, int] = {}
        for key in lookup:
            words = key.split()
            # "U.K." is tokenised as "U.K" + "."; index both spellings.
            for first in {words[0], words[0].rstrip(".")}:
                starts[first] = max(starts.get(first, 0), len(words) + 1)
        return cls(
            lookup=lookup, stop=frozenset(data["stop"]), longest=longest, starts=starts
        )


@lru_cache(maxsize=1)
def gazetteer() -> Gazetteer:
    return Gazetteer.from_json(json.loads(GAZETTEER_PATH.read_text(encoding="utf-8")))


_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9&+'’.-]*[A-Za-z0-9+]|[A-Za-z]|[.,;:!?\"“”()]")
_ORG_WORDS = {
    "Agency",
    "Airlines",
    "Association",
    "Authority",
    "Bank",
    "Board",
    "Bureau",
    "Commission",
    "Committee",
    "Company",
    "Corporation",
    "Council",
    "Court",
    "Department",
    "Federation",
    "Foundation",
    "Fund",
    "Group",
    "Inc",
    "Institute",
    "League",
    "Ministry",
    "Motors",
    "Office",
    "Organisation",
    "Organization",
    "Party",
    "Service",
    "Systems",
    "Union",
    "University",
}


def _is_cap(token: str) -> bool:
    return token[:1].isupper() and any(c.isalpha() for c in token)


def extract_names(text: str, gaz: Gazetteer | None = None) -> list[Name]:
    """Names in the text, canonical and de-duplicated, in order of first mention.

    Gazetteer entries are matched longest first (so "Bank of England" beats
    "England"); other runs of two or more capitalised words become actors or
    organisations. Single capitalised words outside the gazetteer are skipped:
    at a sentence start they are just capitals, and "Powell" alone is too weak.
    """
    gaz = gaz or gazetteer()
    tokens = _TOKEN.findall(text or "")
    found: dict[str, Name] = {}
    i = 0
    while i < len(tokens):
        hit = None
        # Only words that start a gazetteer entry are looked up, and only as
        # far as that entry can reach: most tokens cost one dict probe.
        for width in range(min(gaz.starts.get(tokens[i], 0), len(tokens) - i), 0, -1):
            surface = " ".join(tokens[i : i + width])
            name = gaz.lookup.get(surface) or gaz.lookup.get(surface + ".")
            if name:
                hit = (name, width)
                break
        if hit:
            name, width = hit
            found.setdefault(name.text, name)
            i += width
            continue
        if not _is_cap(tokens[i]) or tokens[i] in gaz.stop:
            i += 1
            continue
        # A capitalised run, allowing lower-case connectors between capitals.
        j = i + 1
        while j < len(tokens) and not _POSSESSIVE.search(tokens[j - 1]):
            if _is_cap(tokens[j]) and tokens[j] not in gaz.stop:
                j += 1
            elif (
                tokens[j].lower() in _CONNECTORS
                and j + 1 < len(tokens)
                and _is_cap(tokens[j + 1])
                and tokens[j + 1] not in gaz.stop
                # "Shares of Nvidia": a known name after the connector ends the run.
                and tokens[j + 1] not in gaz.lookup
            ):
                j += 2
            else:
                break
        span = [_POSSESSIVE.sub("", t).rstrip(".") for t in tokens[i:j]]
        if len(span) >= 2:
            text_ = " ".join(span).replace("’", "'")
            kind = "organisation" if span[-1] in _ORG_WORDS else "actor"
            found.setdefault(text_, Name(text_, kind))
            i = j
        else:
            i += 1
    return list(found.values())
