"""The tick, tx batching and streams, driven by calling tick() (no clock)."""

from __future__ import annotations

import asyncio
import gc
import tracemalloc

import pytest

from newsroom.live.cells import Cell
from newsroom.live.render import component, fragment
from newsroom.live.stream import Stream
from newsroom.live.tick import Scheduler


class Board:
    def __init__(self, n: int) -> None:
        self.rows = Cell(list(range(n)))
        self.cells = {i: Cell(0) for i in range(n)}


def row(board: Board, i: int) -> str:
    return f'<li id="r{i}">{board.cells[i].get()}</li>'


def board_region(board: Board):
    return fragment(
        '<ul id="board">', [component(row, board, i) for i in board.rows.get()], "</ul>"
    )


class Client:
    """A socket's far end: records frames; acks only when told to."""

    def __init__(self) -> None:
        self.frames: list[str] = []

    async def send(self, text: str) -> None:
        self.frames.append(text)


def open_stream(scheduler: Scheduler, region, *args, client: Client | None = None):
    client = client or Client()
    stream = Stream(region, args, client.send, scheduler)
    stream.start()
    return stream, client


async def test_a_burst_of_writes_renders_each_stream_once_per_tick():
    scheduler = Scheduler()
    board = Board(20)
    streams = [open_stream(scheduler, board_region, board) for _ in range(10)]
    await scheduler.tick()
    for stream, _client in streams:
        await stream.ack(1)
    scheduler.renders = 0
    for n in range(100):
        board.cells[n % 20].set(n)
    assert await scheduler.tick() == 10
    assert scheduler.renders == 10
    assert all(len(client.frames) == 2 for _, client in streams)
    # A quiet tick renders nothing.
    assert await scheduler.tick() == 0


async def test_writes_only_mark_streams_dirty():
    scheduler = Scheduler()
    board = Board(3)
    stream, client = open_stream(scheduler, board_region, board)
    await scheduler.tick()
    board.cells[1].set(5)
    assert stream in scheduler.dirty and stream.renders == 1 and len(client.frames) == 1


async def test_a_stream_watches_only_what_its_last_render_read():
    scheduler = Scheduler()
    board = Board(3)
    stream, client = open_stream(scheduler, board_region, board)
    await scheduler.tick()
    await stream.ack(1)
    board.rows.set([0, 1])  # row 2 leaves the board
    await scheduler.tick()
    await stream.ack(2)
    board.cells[2].set(99)
    assert stream not in scheduler.dirty
    assert not board.cells[2].readsets
    board.cells[1].set(7)
    assert stream in scheduler.dirty


async def test_tx_runs_at_the_start_of_the_next_tick_before_rendering():
    scheduler = Scheduler()
    a, b = Cell(0), Cell(0)
    seen: list[tuple[int, int]] = []

    def region():
        seen.append((a.get(), b.get()))
        return f'<p id="ab">{a.get()}={b.get()}</p>'

    stream, client = open_stream(scheduler, region)

    def move(n):
        a.set(n)
        b.set(n)  # the invariant a == b holds between txs, never inside one
        return n * 10

    futures = [scheduler.tx(lambda n=n: move(n)) for n in range(1, 51)]
    assert a.peek() == 0  # nothing ran yet
    await scheduler.tick()
    assert [await f for f in futures] == [n * 10 for n in range(1, 51)]
    assert seen == [(50, 50)]
    assert all(x == y for x, y in seen)


async def test_batch_function_gets_all_of_a_ticks_writes_at_once():
    batches: list[int] = []

    def in_one_transaction(thunks):
        batches.append(len(thunks))
        return [t() for t in thunks]

    scheduler = Scheduler(batch=in_one_transaction)
    cell = Cell(0)
    futures = [scheduler.tx(lambda n=n: cell.set(n) or n) for n in range(30)]
    await scheduler.tick()
    await scheduler.tick()
    assert batches == [30]
    assert [await f for f in futures] == list(range(30))


async def test_async_batch_failure_fails_every_write_of_the_tick():
    async def failing(thunks):
        raise RuntimeError("database is locked")

    scheduler = Scheduler(batch=failing)
    futures = [scheduler.tx(lambda: 1) for _ in range(3)]
    await scheduler.tick()
    for f in futures:
        with pytest.raises(RuntimeError, match="locked"):
            await f


async def test_a_failing_tx_reports_to_its_own_future_only():
    scheduler = Scheduler()
    bad = scheduler.tx(lambda: 1 / 0)
    good = scheduler.tx(lambda: "ok")
    await scheduler.tick()
    with pytest.raises(ZeroDivisionError):
        await bad
    assert await good == "ok"


async def test_one_frame_in_flight_and_a_newer_frame_replaces_the_unsent_one():
    scheduler = Scheduler()
    board = Board(5)
    stream, client = open_stream(scheduler, board_region, board)
    await scheduler.tick()
    assert len(client.frames) == 1
    for n in range(1, 4):
        board.cells[0].set(n)
        await scheduler.tick()
    assert len(client.frames) == 1  # no ack: nothing more is sent
    await stream.ack(1)
    assert len(client.frames) == 2
    assert client.frames[1].endswith('<li id="r0">3</li>')  # the newest, not 1 or 2


async def test_a_client_that_never_acks_keeps_memory_flat():
    scheduler = Scheduler()
    board = Board(50)
    stream, client = open_stream(scheduler, board_region, board)
    await scheduler.tick()

    async def churn(ticks: int) -> None:
        for n in range(ticks):
            board.cells[n % 50].set(n)
            await scheduler.tick()

    await churn(200)  # warm: cache and pages settle
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        await churn(2000)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(client.frames) == 1
    assert stream.renders == 2201
    assert grown < 64 * 1024, f"memory grew by {grown} bytes over 2000 unacked ticks"


async def test_a_missed_frame_makes_the_next_frame_the_whole_region():
    scheduler = Scheduler()
    board = Board(5)
    stream, client = open_stream(scheduler, board_region, board)
    await scheduler.tick()
    await stream.ack(1)
    board.cells[2].set(1)
    await scheduler.tick()
    assert client.frames[1].endswith('<li id="r2">1</li>')
    await stream.ack(2, ok=False)  # the page could not place the part
    assert "full" in client.frames[2].split("-->")[0]
    assert client.frames[2].endswith(stream.page.html)


async def test_stale_or_garbage_acks_are_ignored():
    scheduler = Scheduler()
    board = Board(2)
    stream, client = open_stream(scheduler, board_region, board)
    await scheduler.tick()
    for text in ("nonsense", '{"ack": "x"}', '{"ack": 7}', "[]"):
        await stream.receive(text)
    assert stream.in_flight is not None
    await stream.receive('{"ack": 1}')
    assert stream.in_flight is None


async def test_the_first_frame_is_skipped_when_the_page_already_shows_it():
    scheduler = Scheduler()
    board = Board(4)
    from newsroom.live.render import render_page

    served = render_page(board_region, board)[0]
    stream = Stream(
        board_region, (board,), Client().send, scheduler, have=served.digest
    )
    client = Client()
    stream.send_text = client.send
    stream.start()
    await scheduler.tick()
    assert client.frames == []
    board.cells[3].set(1)
    await scheduler.tick()
    assert client.frames == ['<!--live 1--><li id="r3">1</li>']


async def test_release_drops_every_watch_at_once():
    scheduler = Scheduler()
    board = Board(10)
    stream, _ = open_stream(scheduler, board_region, board)
    await scheduler.tick()
    assert all(c.readsets for c in board.cells.values())
    stream.release()
    assert not any(c.readsets for c in [*board.cells.values(), board.rows])
    board.cells[0].set(1)
    assert stream not in scheduler.dirty


async def test_an_idle_loop_does_not_tick_and_a_write_wakes_it():
    sleeps: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        sleeps.append(seconds)

    now = [100.0]
    scheduler = Scheduler(tick_ms=200, clock=lambda: now[0], sleep=fake_sleep)
    board = Board(2)
    scheduler.start()
    try:
        for _ in range(20):
            await asyncio.sleep(0)
        assert scheduler.ticks == 0 and sleeps == []
        stream, client = open_stream(scheduler, board_region, board)
        for _ in range(20):
            await asyncio.sleep(0)
        assert scheduler.ticks == 1 and len(client.frames) == 1
        assert sleeps == []  # the first write after a quiet spell renders at once
        await stream.ack(1)
        now[0] += 0.05
        board.cells[0].set(1)
        for _ in range(20):
            await asyncio.sleep(0)
        assert scheduler.ticks == 2
        assert sleeps == [pytest.approx(0.15)]  # waited out the rest of the tick
    finally:
        await scheduler.stop()


async def test_a_paced_stream_sends_only_from_ticks_and_loses_nothing():
    scheduler = Scheduler(pace=True)
    board = Board(3)
    stream, client = open_stream(scheduler, board_region, board)
    await scheduler.tick()
    assert len(client.frames) == 1
    board.cells[0].set(1)
    await scheduler.tick()  # frame 1 is not acked yet: the render waits
    assert len(client.frames) == 1
    await stream.ack(1)
    # Acked between ticks: the frame goes with the next tick, not on the ack.
    assert len(client.frames) == 1 and stream in scheduler.held
    board.cells[1].set(2)
    assert await scheduler.tick() == 1  # rendered once, sent once
    assert len(client.frames) == 2 and not scheduler.held
    assert 'id="r0">1<' in client.frames[1] and 'id="r1">2<' in client.frames[1]
    await stream.ack(2)
    # Nothing new: a tick sends nothing.
    await scheduler.tick()
    assert len(client.frames) == 2


async def test_a_paced_frame_held_for_a_closed_stream_is_dropped():
    scheduler = Scheduler(pace=True)
    board = Board(2)
    stream, client = open_stream(scheduler, board_region, board)
    await scheduler.tick()
    board.cells[0].set(1)
    await scheduler.tick()
    await stream.ack(1)
    assert stream in scheduler.held
    stream.release()
    await scheduler.tick()
    assert len(client.frames) == 1 and not scheduler.held


async def test_ticks_are_a_tick_apart_from_the_end_of_the_previous_one():
    sleeps: list[float] = []
    now = [100.0]

    async def fake_sleep(seconds: float) -> None:
        sleeps.append(seconds)
        now[0] += seconds

    def slow_region(board):
        now[0] += 0.15  # this render takes 150 ms
        return board_region(board)

    scheduler = Scheduler(tick_ms=200, clock=lambda: now[0], sleep=fake_sleep)
    board = Board(2)
    scheduler.start()
    try:
        stream, client = open_stream(scheduler, slow_region, board)
        for _ in range(20):
            await asyncio.sleep(0)
        assert scheduler.ticks == 1 and now[0] == pytest.approx(100.15)
        await stream.ack(1)
        board.cells[0].set(1)
        for _ in range(20):
            await asyncio.sleep(0)
        assert scheduler.ticks == 2
        # Slept 200 ms after the first tick ended, not 50 ms after it began.
        assert sleeps == [pytest.approx(0.2)]
    finally:
        await scheduler.stop()
