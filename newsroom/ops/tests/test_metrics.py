"""GET /metrics: valid Prometheus text whose numbers are the database's."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from fold_app.models import Delivery, Item
from newsroom.live.stream import SENT, Stream
from newsroom.ops import heartbeat
from newsroom.ops.heartbeat import Heartbeats
from newsroom.ops.metrics import Family, render
from newsroom.runs.models import Run
from newsroom.sources.models import Source
from sessions_app.models import BrowserSession

pytestmark = pytest.mark.django_db

SAMPLE = re.compile(
    r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)"
    r"(?:\{(?P<labels>[a-zA-Z_][a-zA-Z0-9_]*=\"(?:[^\"\\]|\\.)*\""
    r"(?:,[a-zA-Z_][a-zA-Z0-9_]*=\"(?:[^\"\\]|\\.)*\")*)\})?"
    r" (?P<value>-?[0-9]+(?:\.[0-9]+)?(?:e[-+]?[0-9]+)?)$"
)
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(text: str) -> dict[tuple[str, frozenset], float]:
    """Every line is a comment or `name{labels} value`; returns the samples."""
    assert text.endswith("\n")
    samples = {}
    typed = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            assert kind in ("gauge", "counter")
            typed.add(name)
            continue
        if line.startswith("# HELP "):
            continue
        match = SAMPLE.match(line)
        assert match, f"not a Prometheus sample line: {line!r}"
        assert match["name"] in typed, f"{match['name']} has no TYPE line"
        labels = frozenset(LABEL.findall(match["labels"] or ""))
        key = (match["name"], labels)
        assert key not in samples, f"duplicate sample {line!r}"
        samples[key] = float(match["value"])
    return samples


def value(samples, name: str, **labels: str) -> float:
    return samples[(name, frozenset(labels.items()))]


@pytest.fixture
def world(make_reader):
    """Rows of every kind the metrics count, in known numbers."""
    now = timezone.now()
    alice = make_reader("alice")
    ok = Source.objects.create(
        reader=alice, url="https://a.test/feed", last_success_at=now
    )
    Source.objects.create(reader=alice, url="https://b.test/feed", error_count=2)
    Source.objects.create(reader=alice, url="https://c.test/feed", error_count=1)
    Source.objects.create(reader=alice, url="https://d.test/feed")
    for state in ["done", "done", "failed", "interrupted", "queued"]:
        Run.objects.create(reader=alice, state=state)

    def delivery(status, received_ago, folded_ago=None):
        return Delivery.objects.create(
            source=ok,
            received_at=now - timedelta(seconds=received_ago),
            status=status,
            body=b"x",
            folded_at=None
            if folded_ago is None
            else now - timedelta(seconds=folded_ago),
        )

    delivery("pending", 600)
    delivery("pending", 10)
    delivery("deferred", 30)
    delivery("parsed", 700, folded_ago=20)
    delivery("parsed", 700, folded_ago=200)
    delivery("failed", 700, folded_ago=1000)
    for n in range(3):
        Item.objects.create(source=ok, key=f"k{n}", first_seen_at=now, updated_at=now)
    for n, state in enumerate(["open", "open", "gone"]):
        BrowserSession.objects.create(
            id=f"t-{n}",
            tag="t",
            owner=alice,
            url="https://e.test/",
            state=state,
            created_at=now,
        )
    return alice


def test_every_line_is_a_comment_or_a_sample_and_numbers_match_the_database(
    operator_client, world, all_roles_beating
):
    response = operator_client.get("/metrics")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    samples = parse(response.content.decode())

    assert value(samples, "newsroom_runs", state="done") == 2
    assert value(samples, "newsroom_runs", state="failed") == 1
    assert value(samples, "newsroom_runs", state="interrupted") == 1
    assert value(samples, "newsroom_runs", state="queued") == 1
    assert value(samples, "newsroom_runs", state="running") == 0

    assert value(samples, "newsroom_sources", health="ok") == 1
    assert value(samples, "newsroom_sources", health="failing") == 2
    assert value(samples, "newsroom_sources", health="new") == 1

    assert value(samples, "newsroom_deliveries", status="pending") == 2
    assert value(samples, "newsroom_deliveries", status="deferred") == 1
    assert value(samples, "newsroom_deliveries", status="parsed") == 2
    assert value(samples, "newsroom_deliveries", status="failed") == 1
    assert 600 <= value(samples, "newsroom_fold_lag_seconds") < 660
    assert value(samples, "newsroom_deliveries_folded", window="1m") == 1
    assert value(samples, "newsroom_deliveries_folded", window="5m") == 2
    assert value(samples, "newsroom_fold_rate_per_second", window="1m") == round(
        1 / 60, 3
    )

    assert value(samples, "newsroom_items") == 3
    assert value(samples, "newsroom_browser_pages_open") == 2
    for role in heartbeat.ROLES:
        assert value(samples, "newsroom_role_up", role=role) == 1


def test_no_waiting_delivery_means_zero_lag(operator_client):
    samples = parse(operator_client.get("/metrics").content.decode())
    assert value(samples, "newsroom_fold_lag_seconds") == 0
    assert value(samples, "newsroom_role_up", role="fold") == 0


def test_heartbeats_appear_per_process_with_their_age_and_freshness(operator_client):
    fresh = Heartbeats(process="web-1:10")
    fresh.add(
        "web", detail=lambda: {"live": {"streams": 4, "frames": 90, "bytes": 5000}}
    )
    fresh.beat()
    old = Heartbeats(process='odd"host\\:11')  # labels are escaped
    old.add("fold")
    old.beat()
    from newsroom.ops.models import Heartbeat

    Heartbeat.objects.filter(role="fold").update(
        last_beat_at=timezone.now() - timedelta(seconds=300)
    )
    samples = parse(operator_client.get("/metrics").content.decode())
    assert (
        value(samples, "newsroom_heartbeat_fresh", role="web", process="web-1:10") == 1
    )
    odd = 'odd\\"host\\\\:11'
    assert value(samples, "newsroom_heartbeat_fresh", role="fold", process=odd) == 0
    assert (
        300
        <= value(samples, "newsroom_heartbeat_age_seconds", role="fold", process=odd)
        < 360
    )
    assert value(samples, "newsroom_role_up", role="fold") == 0
    # Another web process's live figures come from its heartbeat.
    assert value(samples, "newsroom_live_streams_open", process="web-1:10") == 4
    assert value(samples, "newsroom_live_frames_sent_total", process="web-1:10") == 90
    assert value(samples, "newsroom_live_bytes_sent_total", process="web-1:10") == 5000


class _Scheduler:
    def mark_dirty(self, stream) -> None:
        pass


def test_frames_sent_by_this_process_are_counted_and_reported(operator_client):
    import asyncio

    from newsroom.live.render import fragment

    sent: list[str] = []

    async def send(text: str) -> None:
        sent.append(text)

    stream = Stream(lambda: fragment('<p id="x">héllo</p>'), (), send, _Scheduler())
    frames, nbytes = SENT.frames, SENT.bytes
    stream.render()
    asyncio.run(stream.flush())
    assert SENT.frames == frames + 1
    assert SENT.bytes == nbytes + len(sent[0].encode())

    text = operator_client.get("/metrics").content.decode()
    samples = parse(text)
    own = heartbeat.heartbeats().process
    assert value(samples, "newsroom_live_frames_sent_total", process=own) == SENT.frames
    assert value(samples, "newsroom_live_bytes_sent_total", process=own) == SENT.bytes


def test_render_writes_integers_plainly_and_escapes_labels():
    family = Family("x_total", "counter", "An x.")
    family.add(3, a='q"\\\n')
    family.add(0.25)
    assert render([family]) == (
        "# HELP x_total An x.\n# TYPE x_total counter\n"
        'x_total{a="q\\"\\\\\\n"} 3\nx_total 0.25\n'
    )
