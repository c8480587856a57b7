"""What the writers read (Digest) and write (Section, Claim). Pure: no Django."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date


@dataclass
class Claim:
    text: str
    refs: list[int]  # item ids, verified against the digest before storing
    event: str = ""
    headline: str = ""

    def to_json(self) -> dict:
        out: dict = {"text": self.text, "refs": self.refs}
        if self.event:
            out["event"] = self.event
        if self.headline:
            out["headline"] = self.headline
        return out


@dataclass
class Section:
    key: str
    heading: str
    claims: list[Claim] = field(default_factory=list)
    category: int | None = None

    def plain(self) -> str:
        return " ".join(f"{c.headline} {c.text}".strip() for c in self.claims)

    def to_json(self) -> dict:
        return {
            "key": self.key,
            "heading": self.heading,
            "category": self.category,
            "claims": [c.to_json() for c in self.claims],
        }


@dataclass
class Digest:
    """The day, prepared: events (JSON-ready, most important first), the edges
    between them, the reader's categories in order, and every item an event
    holds (id -> {title, url, source, text})."""

    day: date
    categories: list[tuple[int | None, str]]
    events: list[dict]
    edges: list[dict]
    items: dict[int, dict]

    def verify(self, sections: list[Section]) -> tuple[list[Section], int]:
        """Drop references to items not in the digest; returns (sections, dropped)."""
        dropped = 0
        for section in sections:
            for claim in section.claims:
                kept = [r for r in dict.fromkeys(claim.refs) if r in self.items]
                dropped += len(claim.refs) - len(kept)
                claim.refs = kept
        return sections, dropped


def to_markdown(title: str, sections: list[dict], items: dict) -> str:
    """The briefing as Markdown; references become numbered links to the items."""
    lines = [f"# {title}", ""]
    numbers: dict[str, int] = {}
    for section in sections:
        lines += [f"## {section['heading']}", ""]
        for claim in section["claims"]:
            refs = []
            for ref in claim["refs"]:
                key = str(ref)
                if key not in items:
                    continue
                numbers.setdefault(key, len(numbers) + 1)
                refs.append(f"[{numbers[key]}]")
            head = f"**{claim['headline']}** " if claim.get("headline") else ""
            lines.append(f"- {head}{claim['text']} {''.join(refs)}".rstrip())
        lines.append("")
    if numbers:
        lines += ["## Sources", ""]
        for key, n in numbers.items():
            item = items[key]
            lines.append(
                f"{n}. [{item['title'] or item['url']}]({item['url']}) — {item['source']}"
            )
        lines.append("")
    return "\n".join(lines)
