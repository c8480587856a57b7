"""The OpenAI-compatible writer against a local streaming server."""

from __future__ import annotations

from datetime import date

import pytest

from newsroom.briefing.digest import Digest
from newsroom.briefing.llm import LlmError, LlmWriter, parse_sections
from newsroom.briefing.tests.llm_server import ChatServer


def _digest() -> Digest:
    items = {
        11: {
            "title": "Fed raises rates",
            "url": "https://a.example/1",
            "source": "A",
            "text": "The Fed raised rates.",
        },
        12: {
            "title": "Fed hikes 50bp",
            "url": "https://b.example/2",
            "source": "B",
            "text": "Rates up by half a point.",
        },
        21: {
            "title": "Quake in Japan",
            "url": "https://c.example/3",
            "source": "C",
            "text": "A quake hit Japan.",
        },
    }
    events = [
        {
            "key": "e1",
            "headline": "Fed raises rates",
            "items": [11, 12],
            "category": 2,
            "category_name": "Economics",
            "independent_sources": 2,
            "lead": "",
            "previous": [],
        },
        {
            "key": "e2",
            "headline": "Quake in Japan",
            "items": [21],
            "category": 4,
            "category_name": "World",
            "independent_sources": 1,
            "lead": "",
            "previous": [],
        },
    ]
    return Digest(
        date(2026, 11, 30), [(2, "Economics"), (4, "World")], events, [], items
    )


REPLY = (
    "## Overview\n"
    "- The Fed raised rates by half a point [#11, #12] while Japan was shaken by a quake [#21].\n\n"
    "## Economics\n"
    "- Markets absorbed the Fed's biggest hike of the year [#12] [#999].\n\n"
    "## World\n"
    "- A strong earthquake hit northern Japan [#21].\n\n"
    "## How it all connects\n"
    "- Tokyo markets fell on the quake [#77].\n\n"
    "## Outlook\n"
    "- More hikes are expected [#11].\n"
)


@pytest.fixture
def server():
    with ChatServer() as s:
        s.reply = REPLY
        yield s


def _writer(server: ChatServer, scenario: str, timeout: float = 5.0) -> LlmWriter:
    return LlmWriter(
        server.url(scenario), "test-model", api_key="sk-test", timeout=timeout
    )


def test_streamed_sections_keep_only_references_to_known_items(server):
    progress: list[tuple[str, str]] = []
    sections = _writer(server, "good").write(
        _digest(), lambda h, t: progress.append((h, t))
    )
    assert [s.heading for s in sections] == [
        "Overview",
        "Economics",
        "World",
        "How it all connects",
        "Outlook",
    ]
    assert sections[0].claims[0].refs == [11, 12, 21]
    # #999 and #77 do not exist: dropped, and the marker is gone from the text.
    assert sections[1].claims[0].refs == [12]
    assert "999" not in sections[1].claims[0].text
    assert sections[3].claims[0].refs == []
    assert "#77" not in sections[3].claims[0].text
    assert sections[1].key == "category-2" and sections[1].category == 2
    # Progress arrived while streaming, with the current heading.
    assert len(progress) > 10
    assert "Outlook" in {h for h, _ in progress}


def test_the_request_is_an_openai_chat_completion_with_the_items(server):
    _writer(server, "good").write(_digest(), lambda h, t: None)
    request = server.requests[-1]
    assert request["path"] == "/good/v1/chat/completions"
    assert request["headers"]["Authorization"] == "Bearer sk-test"
    body = request["body"]
    assert body["model"] == "test-model" and body["stream"] is True
    prompt = body["messages"][-1]["content"]
    assert "[#11]" in prompt and "[#21]" in prompt and "Economics" in prompt


@pytest.mark.parametrize(
    ("scenario", "words"),
    [
        ("error", "out of memory"),
        ("cut", "ended before"),
        ("malformed", "not JSON"),
        ("http500", "HTTP 500"),
    ],
)
def test_a_failing_model_raises_a_plain_reason(server, scenario, words):
    with pytest.raises(LlmError) as caught:
        _writer(server, scenario).write(_digest(), lambda h, t: None)
    assert words in str(caught.value)


def test_a_model_that_never_answers_times_out(server):
    with pytest.raises(LlmError) as caught:
        _writer(server, "silent", timeout=0.3).write(_digest(), lambda h, t: None)
    assert "0.3 s" in str(caught.value)


def test_text_citing_only_unknown_items_is_rejected(server):
    server.reply = (
        "## Overview\n- Something happened [#500].\n- And more [#501, #502].\n"
    )
    with pytest.raises(LlmError, match="cited none"):
        _writer(server, "good").write(_digest(), lambda h, t: None)


def test_an_unreachable_endpoint_is_a_plain_error():
    # Port 9 on loopback (discard) is closed here: connection refused.
    writer = LlmWriter("http://127.0.0.1:9/v1", "m", timeout=2)
    with pytest.raises(LlmError, match="connection to the model failed"):
        writer.write(_digest(), lambda h, t: None)


def test_paragraphs_without_bullets_and_text_before_a_heading_are_claims():
    sections = parse_sections(
        "Intro line [#11].\n\n## World\nA quake hit\nJapan [#21; #12].\n", _digest()
    )
    assert sections[0].key == "overview" and sections[0].claims[0].refs == [11]
    assert sections[1].claims[0].text == "A quake hit Japan."
    assert sections[1].claims[0].refs == [21, 12]
