"""The built-in analyst: writes a briefing without a model.

Extractive and deterministic: every sentence it writes is a headline, a lead
sentence or a template over the digest, and every claim carries the ids of
the items it comes from. Pure: no Django.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date

from newsroom.briefing import text as textlib
from newsroom.briefing.digest import Claim, Digest, Section

PER_SECTION = 8
OVERVIEW = 5
CONNECTIONS = 8
OUTLOOK = 5
# Sentences that look forward: what is expected, planned or warned about.
_FORWARD = re.compile(
    r"\b(will|would|expected to|plans? to|is set to|are set to|next (week|month|year)|"
    r"signall?ed|warned|could|is due|are due|deadline|later this)\b",
    re.IGNORECASE,
)

Report = Callable[[str, str], None]  # (heading, text just written)


def _day(value: str) -> str:
    return date.fromisoformat(value[:10]).strftime("%a %-d %b")


def _sources_phrase(event: dict) -> str:
    n = event["independent_sources"]
    return "one source" if n == 1 else f"{n} sources"


class Analyst:
    engine = "analyst"
    model = "built-in analyst"

    def write(self, digest: Digest, report: Report) -> list[Section]:
        sections = [self._overview(digest)]
        report(sections[-1].heading, sections[-1].plain())
        for category_id, name in digest.categories:
            events = [e for e in digest.events if e["category"] == category_id]
            if events:
                sections.append(self._category(digest, category_id, name, events))
                report(sections[-1].heading, sections[-1].plain())
        sections.append(self._connections(digest))
        report(sections[-1].heading, sections[-1].plain())
        sections.append(self._outlook(digest))
        report(sections[-1].heading, sections[-1].plain())
        return [s for s in sections if s.claims]

    def _overview(self, digest: Digest) -> Section:
        claims = []
        for event in digest.events[:OVERVIEW]:
            text = f"{event['headline']} ({_sources_phrase(event)}"
            if event["previous"]:
                text += f"; developing since {_day(event['previous'][-1]['day'])}"
            text += ")."
            claims.append(Claim(text=text, refs=event["items"][:6], event=event["key"]))
        return Section("overview", "Overview", claims)

    def _category(
        self, digest: Digest, category_id: int | None, name: str, events: list[dict]
    ) -> Section:
        claims = []
        for event in events[:PER_SECTION]:
            lead = event["lead"] or event["headline"]
            claims.append(
                Claim(
                    text=lead,
                    refs=event["items"][:6],
                    event=event["key"],
                    headline=event["headline"],
                )
            )
        return Section(f"category-{category_id}", name, claims, category=category_id)

    def _connections(self, digest: Digest) -> Section:
        by_key = {e["key"]: e for e in digest.events}
        claims = []
        for edge in digest.edges[:CONNECTIONS]:
            a, b = by_key[edge["a"]], by_key[edge["b"]]
            if edge["kind"] == "names":
                text = (
                    f"“{a['headline']}” and “{b['headline']}” both involve "
                    f"{_join(edge['shared'])}."
                )
            else:
                what = f", around {_join(edge['shared'])}" if edge["shared"] else ""
                text = (
                    f"“{a['headline']}” is close in meaning to “{b['headline']}”{what}."
                )
            claims.append(
                Claim(text=text, refs=[a["items"][0], b["items"][0]], event=a["key"])
            )
        return Section("connections", "How it all connects", claims)

    def _outlook(self, digest: Digest) -> Section:
        claims = []
        used: set[str] = set()
        for event in digest.events:
            if len(claims) >= OUTLOOK:
                break
            for item_id in event["items"][:4]:
                item = digest.items[item_id]
                forward = [
                    s for s in textlib.sentences(item["text"]) if _FORWARD.search(s)
                ]
                if forward and forward[0] not in used:
                    used.add(forward[0])
                    claims.append(
                        Claim(text=forward[0], refs=[item_id], event=event["key"])
                    )
                    break
        developing = [e for e in digest.events if e["previous"]][:3]
        for event in developing:
            days = sorted({p["day"] for p in event["previous"]})
            claims.append(
                Claim(
                    text=(
                        f"Still developing: “{event['headline']}”, a story followed since "
                        f"{_day(days[0])} across {len(days) + 1} briefings."
                    ),
                    refs=event["items"][:3],
                    event=event["key"],
                )
            )
        return Section("outlook", "Outlook", claims)


def _join(words: list[str]) -> str:
    if len(words) <= 1:
        return "".join(words)
    return ", ".join(words[:-1]) + " and " + words[-1]
