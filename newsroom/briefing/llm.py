"""An OpenAI-compatible chat model as a briefing writer, streamed over httpx.

Works with Ollama, llama.cpp server, vLLM or a hosted API: POST
`<NEWSROOM_LLM_URL>/chat/completions` with `stream: true`, read the
server-sent events. The model is asked for Markdown sections whose bullets end
with item references like [#123]; references to items that are not in the
digest are dropped before anything is stored or shown.

Anything that goes wrong (HTTP error, an error inside the stream, a broken or
empty stream, a timeout, text without one valid reference) raises LlmError with
plain words; the caller falls back to the built-in analyst.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable

import httpx

from newsroom.briefing.digest import Claim, Digest, Section

_REF_GROUP = re.compile(r"\[\s*#?\d+(?:\s*[,;]\s*#?\d+)*\s*\]")
_REF_NUMBER = re.compile(r"\d+")
_HEADING = re.compile(r"^#{1,3}\s+(.*\S)\s*$")
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")

Report = Callable[[str, str], None]


class LlmError(Exception):
    """The model could not write the briefing; str() says why in plain words."""


SYSTEM_PROMPT = (
    "You are a careful news editor writing a daily briefing for one reader. "
    "Use only the events and items given. Write Markdown with these sections, each "
    "starting with '## ': Overview; one section per category named exactly as given; "
    "How it all connects; Outlook. Under each heading write short bullet points "
    "starting with '- '. End every bullet with the ids of the items it rests on, in "
    "square brackets, like [#12] or [#12, #40]. Never cite an id that is not listed. "
    "Do not invent facts."
)


def build_prompt(digest: Digest, max_events: int = 30, max_items: int = 3) -> str:
    names = [name for _, name in digest.categories]
    lines = [
        f"Date: {digest.day.isoformat()}",
        f"Categories, in order: {', '.join(names)}",
        "",
        "Events, most important first:",
    ]
    by_key = {e["key"]: e for e in digest.events}
    for event in digest.events[:max_events]:
        lines.append(
            f"Event {event['key']} [{event['category_name'] or 'Uncategorised'}] "
            f"{event['headline']} — {event['independent_sources']} sources"
        )
        for item_id in event["items"][:max_items]:
            item = digest.items[item_id]
            summary = item["text"][:200].replace("\n", " ")
            lines.append(f"  [#{item_id}] {item['source']}: {item['title']}. {summary}")
    if digest.edges:
        lines += ["", "Connections between events:"]
        for edge in digest.edges[:20]:
            if edge["a"] in by_key and edge["b"] in by_key:
                lines.append(f"  {edge['a']} — {edge['b']}: {edge['label']}")
    return "\n".join(lines)


class LlmWriter:
    engine = "llm"

    def __init__(
        self,
        url: str,
        model: str,
        api_key: str = "",
        timeout: float = 120.0,
        transport: httpx.BaseTransport | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.url = url.rstrip("/")
        self.model = model
        self.api_key = api_key
        self.timeout = timeout
        self.transport = transport
        self.clock = clock

    def write(self, digest: Digest, report: Report) -> list[Section]:
        text = self.complete(build_prompt(digest), report)
        sections = parse_sections(text, digest)
        sections, _ = digest.verify(sections)
        if not any(c.refs for s in sections for c in s.claims):
            raise LlmError("the model's text cited none of the day's items")
        return sections

    def complete(self, prompt: str, report: Report) -> str:
        """Stream one chat completion; returns the whole text."""
        headers = {"Accept": "text/event-stream"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        body = {
            "model": self.model,
            "stream": True,
            "temperature": 0.2,
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": prompt},
            ],
        }
        deadline = self.clock() + self.timeout
        timeout = httpx.Timeout(self.timeout, connect=min(10.0, self.timeout))
        chunks: list[str] = []
        heading = ""
        line_buffer = ""
        finished = False
        try:
            # The endpoint is the operator's own (often Ollama on localhost), so
            # it is not held to the private-network rule for reader sources;
            # proxies from the environment are still ignored.
            with httpx.Client(
                timeout=timeout, trust_env=False, transport=self.transport
            ) as client:
                with client.stream(
                    "POST", f"{self.url}/chat/completions", json=body, headers=headers
                ) as response:
                    if response.status_code != 200:
                        detail = response.read()[:300].decode("utf-8", "replace")
                        raise LlmError(
                            f"the model endpoint answered HTTP {response.status_code}: {detail}"
                        )
                    for line in response.iter_lines():
                        if self.clock() > deadline:
                            raise LlmError(
                                f"the model took longer than {self.timeout:g} s"
                            )
                        if not line.strip() or line.startswith(":"):
                            continue
                        if not line.startswith("data:"):
                            raise LlmError(
                                f"the model sent a malformed stream line: {line[:80]!r}"
                            )
                        data = line[5:].strip()
                        if data == "[DONE]":
                            finished = True
                            break
                        delta = _delta(data)
                        if delta is None:
                            finished = True
                            continue
                        chunks.append(delta)
                        line_buffer += delta
                        *complete, line_buffer = line_buffer.split("\n")
                        for done in complete:
                            match = _HEADING.match(done)
                            if match:
                                heading = match.group(1)
                        report(heading, delta)
        except httpx.TimeoutException:
            raise LlmError(
                f"the model did not answer within {self.timeout:g} s"
            ) from None
        except httpx.HTTPError as e:
            raise LlmError(
                f"the connection to the model failed: {e or type(e).__name__}"
            ) from None
        text = "".join(chunks)
        if not finished:
            raise LlmError("the model's stream ended before it said it was done")
        if not text.strip():
            raise LlmError("the model returned no text")
        return text


def _delta(data: str) -> str | None:
    """The text of one stream chunk; None for a chunk that only finishes."""
    try:
        chunk = json.loads(data)
    except json.JSONDecodeError:
        raise LlmError(
            f"the model sent a chunk that is not JSON: {data[:80]!r}"
        ) from None
    if not isinstance(chunk, dict):
        raise LlmError("the model sent a chunk that is not a JSON object")
    if "error" in chunk:
        error = chunk["error"]
        message = error.get("message") if isinstance(error, dict) else error
        raise LlmError(f"the model reported an error: {message}")
    choices = chunk.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise LlmError("the model sent a chunk without choices")
    choice = choices[0]
    content = (choice.get("delta") or {}).get("content")
    if content is None:
        if choice.get("finish_reason"):
            return None
        return ""
    if not isinstance(content, str):
        raise LlmError("the model sent content that is not text")
    return content


def parse_sections(text: str, digest: Digest) -> list[Section]:
    """Markdown -> sections of claims; a claim is a bullet or a paragraph.
    Reference ids are parsed here and verified by the caller."""
    categories = {name.lower(): cid for cid, name in digest.categories}
    sections: list[Section] = []
    current: Section | None = None
    paragraph: list[str] = []

    def flush() -> None:
        nonlocal paragraph
        if paragraph and current is not None:
            claim = _claim(" ".join(paragraph))
            if claim.text:
                current.claims.append(claim)
        paragraph = []

    for raw in text.splitlines():
        line = raw.strip()
        match = _HEADING.match(line)
        if match:
            flush()
            heading = match.group(1).strip("*# ").strip()
            key = _section_key(heading, categories)
            current = Section(
                key, heading, [], category=categories.get(heading.lower())
            )
            sections.append(current)
            continue
        if current is None:
            if not line:
                continue
            current = Section("overview", "Overview", [])
            sections.append(current)
        if not line:
            flush()
        elif _BULLET.match(line):
            flush()
            paragraph = [_BULLET.sub("", line)]
        else:
            paragraph.append(line)
    flush()
    return [s for s in sections if s.claims]


def _section_key(heading: str, categories: dict[str, int | None]) -> str:
    folded = heading.lower()
    if folded in categories:
        return f"category-{categories[folded]}"
    if "connect" in folded:
        return "connections"
    if "outlook" in folded or "ahead" in folded:
        return "outlook"
    if "overview" in folded or "summary" in folded:
        return "overview"
    return "section-" + re.sub(r"[^a-z0-9]+", "-", folded).strip("-")


def _claim(text: str) -> Claim:
    refs = [
        int(n) for group in _REF_GROUP.findall(text) for n in _REF_NUMBER.findall(group)
    ]
    clean = _REF_GROUP.sub("", text)
    clean = re.sub(r"\s+([.,;:!?])", r"\1", re.sub(r"\s{2,}", " ", clean)).strip()
    return Claim(text=clean, refs=refs)
