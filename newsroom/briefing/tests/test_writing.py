"""Writing a briefing: the built-in analyst, the model with its fallback, signals."""

from __future__ import annotations

from datetime import timedelta

import pytest

from newsroom.briefing.llm import LlmWriter
from newsroom.briefing.models import Briefing
from newsroom.briefing.progress import Progress
from newsroom.briefing.service import write_briefing
from newsroom.briefing.signals import briefing_progress, briefing_stored
from newsroom.briefing.tests.conftest import DAY, END_OF_DAY
from newsroom.briefing.tests.llm_server import ChatServer

pytestmark = pytest.mark.django_db


@pytest.fixture
def progress_log():
    sent: list[dict] = []

    def receiver(sender, run_id, progress, message, **kw):
        sent.append({"run_id": run_id, "message": message, **progress})

    briefing_progress.connect(receiver, weak=False)
    yield sent
    briefing_progress.disconnect(receiver)


@pytest.fixture
def stored_log():
    sent: list[dict] = []

    def receiver(sender, briefing, reader, **kw):
        sent.append({"sender": sender, "briefing": briefing, "reader": reader})

    briefing_stored.connect(receiver, weak=False)
    yield sent
    briefing_stored.disconnect(receiver)


def _refs(briefing: Briefing) -> list[int]:
    return [r for s in briefing.sections for c in s["claims"] for r in c["refs"]]


def test_the_built_in_analyst_writes_every_section_with_resolving_references(
    alice, news_day, embedder
):
    briefing = write_briefing(alice, DAY, embedder=embedder, now=END_OF_DAY)
    keys = [s["key"] for s in briefing.sections]
    assert keys[0] == "overview" and keys[-2:] == ["connections", "outlook"]
    assert {s["heading"] for s in briefing.sections} >= {
        "Politics",
        "Economics",
        "World",
        "Culture",
    }
    ids = {i.id for items in news_day.values() for i in items}
    for section in briefing.sections:
        for claim in section["claims"]:
            assert claim["text"] and claim["refs"], claim
            for ref in claim["refs"]:
                assert ref in ids
                assert str(ref) in briefing.items  # resolves to a stored title and link
    assert briefing.engine == "analyst" and not briefing.fallback_reason
    assert "## How it all connects" in briefing.text and "## Sources" in briefing.text


def test_the_built_in_analyst_is_deterministic(alice, news_day, embedder):
    first = write_briefing(alice, DAY, embedder=embedder, now=END_OF_DAY)
    second = write_briefing(alice, DAY, embedder=embedder, now=END_OF_DAY)
    assert first.sections == second.sections
    assert first.events == second.events
    assert first.graph == second.graph
    assert first.text == second.text


def test_a_model_failing_mid_stream_falls_back_with_the_reason(
    alice, alice_client, news_day, embedder, progress_log
):
    with ChatServer() as server:
        server.reply = "## Overview\n- " + "Words and more words. " * 40
        writer = LlmWriter(server.url("error"), "tiny-model", timeout=5)
        briefing = write_briefing(
            alice, DAY, writer=writer, embedder=embedder, now=END_OF_DAY
        )
    assert briefing.engine == "analyst"
    assert "tiny-model" in briefing.fallback_reason
    assert "out of memory" in briefing.fallback_reason
    assert briefing.sections and all(
        c["refs"] for s in briefing.sections for c in s["claims"]
    )
    # The reason was logged into the progress, and the engine switched.
    assert any(p["message"] and "out of memory" in p["message"] for p in progress_log)
    assert progress_log[-1]["engine"] == "analyst"
    # The reader sees why on the page.
    page = alice_client.get(briefing.get_absolute_url()).content.decode()
    assert "out of memory while generating" in page
    assert "The built-in analyst wrote this briefing instead" in page


def test_a_model_that_never_answers_still_ends_with_a_briefing(
    alice, news_day, embedder
):
    with ChatServer() as server:
        writer = LlmWriter(server.url("silent"), "slow-model", timeout=0.3)
        briefing = write_briefing(
            alice, DAY, writer=writer, embedder=embedder, now=END_OF_DAY
        )
    assert briefing.pk and briefing.engine == "analyst"
    assert "did not answer within 0.3 s" in briefing.fallback_reason


def test_a_models_references_to_unknown_items_are_never_stored_or_shown(
    alice, alice_client, news_day, embedder
):
    fed = news_day["fed"]
    with ChatServer() as server:
        server.reply = (
            "## Overview\n"
            f"- The Fed raised rates by half a point [#{fed[0].id}, #{fed[1].id}, #987654].\n"
            "## Economics\n"
            f"- Powell warned of sticky inflation [#{fed[2].id}] and a phantom [#424242].\n"
        )
        writer = LlmWriter(server.url("good"), "good-model", timeout=5)
        briefing = write_briefing(
            alice, DAY, writer=writer, embedder=embedder, now=END_OF_DAY
        )
    assert briefing.engine == "llm" and briefing.model == "good-model"
    assert _refs(briefing) == [fed[0].id, fed[1].id, fed[2].id]
    assert "987654" not in briefing.text and "424242" not in briefing.text
    page = alice_client.get(briefing.get_absolute_url()).content.decode()
    assert "987654" not in page and "424242" not in page
    assert fed[0].url in page


def test_progress_is_sent_and_throttled_and_storing_is_announced(
    alice,
    news_day,
    embedder,
    progress_log,
    stored_log,
    django_capture_on_commit_callbacks,
):
    with django_capture_on_commit_callbacks(execute=True):
        briefing = write_briefing(alice, DAY, embedder=embedder, now=END_OF_DAY)
    stages = [p["stage"] for p in progress_log]
    assert stages[0] == "gathering" and stages[-1] == "stored"
    assert {"grouping", "writing"} <= set(stages)
    assert all(set(p) >= {"stage", "words", "heading", "engine"} for p in progress_log)
    assert progress_log[-1]["words"] > 50
    assert stored_log == [{"sender": Briefing, "briefing": briefing, "reader": alice}]


def test_progress_updates_closer_than_the_interval_are_coalesced(progress_log):
    now = [100.0]
    progress = Progress(run_id=7, engine="llm", interval=0.2, clock=lambda: now[0])
    progress.stage("writing", "start")
    for _ in range(50):  # fifty tokens within 0.1 s
        now[0] += 0.002
        progress.wrote("Overview", "word ")
    assert len(progress_log) == 1  # only the stage change went out
    now[0] += 0.2
    progress.wrote("Economics", "two words")
    assert len(progress_log) == 2
    assert progress_log[-1] == {
        "run_id": 7,
        "message": None,
        "stage": "writing",
        "words": 52,
        "heading": "Economics",
        "engine": "llm",
    }
    progress.wrote("Economics", "more")  # too soon: held back
    assert len(progress_log) == 2
    progress.flush()
    assert len(progress_log) == 3 and progress_log[-1]["words"] == 53


def test_a_run_carries_its_id_into_the_progress(
    alice, news_day, embedder, progress_log
):
    from newsroom.runs.models import Run

    run = Run.objects.create(reader=alice)
    briefing = write_briefing(alice, DAY, run=run, embedder=embedder, now=END_OF_DAY)
    assert briefing.run == run
    assert {p["run_id"] for p in progress_log} == {run.id}


def test_a_day_without_items_still_gets_a_briefing(alice, embedder):
    briefing = write_briefing(alice, DAY, embedder=embedder, now=END_OF_DAY)
    assert briefing.pk and briefing.events == [] and briefing.item_count == 0


def test_storylines_link_to_earlier_briefings_and_leave_out_stale_stories(
    alice, embedder
):
    from newsroom.briefing.tests.conftest import make_items
    from newsroom.briefing.tests.news import NEWS

    yesterday = DAY - timedelta(days=1)
    fed = [n for n in NEWS if n[0] == "fed"]
    quake = [n for n in NEWS if n[0] == "quake"]
    make_items(alice, fed[:2] + quake, day=yesterday, prefix="y")
    first = write_briefing(
        alice, yesterday, embedder=embedder, now=END_OF_DAY - timedelta(days=1)
    )
    # Today: two new Fed reports (new links), and the quake reports again
    # (same links, re-listed by an aggregator): nothing new about the quake.
    make_items(alice, fed[2:] + quake, day=DAY, prefix="t")
    second = write_briefing(alice, DAY, embedder=embedder, now=END_OF_DAY)
    assert second.left_out == 1
    headlines = [e["headline"] for e in second.events]
    assert not any("quake" in h.lower() or "tsunami" in h.lower() for h in headlines)
    fed_today = next(e for e in second.events if e["previous"])
    fed_before = next(
        e for e in first.events if "Fed" in e["headline"] or "Federal" in e["headline"]
    )
    assert fed_today["story"] == fed_before["story"]
    assert fed_today["previous"][0]["briefing"] == first.id
    page_claims = " ".join(c["text"] for s in second.sections for c in s["claims"])
    assert "developing since" in page_claims or "Still developing" in page_claims
