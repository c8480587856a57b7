from __future__ import annotations

from newsroom.live.cells import Cell, ReadSet, capture, record


class Counter:
    def __init__(self) -> None:
        self.calls = 0

    def cells_changed(self) -> None:
        self.calls += 1


def test_capture_returns_the_result_with_every_cell_read_and_its_version():
    a, b, unread = Cell(1), Cell(2), Cell(5)
    b.set(2)  # b is at version 1 now
    result, reads = capture(lambda: a.get() + b.get())
    assert result == 3
    assert reads.versions == {a: 0, b: 1}
    assert unread not in reads


def test_peek_is_not_a_read():
    a = Cell(1)
    _, reads = capture(a.peek)
    assert len(reads) == 0


def test_a_nested_capture_counts_for_the_enclosing_one():
    a, b = Cell("a"), Cell("b")

    def inner():
        return b.get()

    def outer():
        return a.get() + capture(inner)[0]

    result, reads = capture(outer)
    assert result == "ab"
    assert set(reads.versions) == {a, b}


def test_a_single_nested_read_set_is_shared_not_copied():
    a = Cell(1)
    inner_reads = capture(a.get)[1]
    _, reads = capture(lambda: record(inner_reads))
    assert reads is inner_reads


def test_read_set_is_valid_until_a_cell_it_read_is_written():
    a, b, other = Cell(1), Cell(2), Cell(3)
    _, reads = capture(lambda: a.get() + b.get())
    assert reads.valid()
    other.set(4)
    assert reads.valid()
    b.set(5)
    assert not reads.valid()


def test_watchers_hear_once_per_read_set_and_not_about_other_cells():
    a, b, other = Cell(1), Cell(2), Cell(3)
    _, reads = capture(lambda: a.get() + b.get())
    watcher = Counter()
    reads.attach(watcher)
    other.set(0)
    assert watcher.calls == 0
    a.set(10)
    b.set(20)
    a.set(30)
    # The set went stale at the first write; the rest cannot make it staler.
    assert watcher.calls == 1


def test_attach_after_a_write_reports_the_write_at_once():
    a = Cell(1)
    _, reads = capture(a.get)
    a.set(2)
    watcher = Counter()
    reads.attach(watcher)
    assert watcher.calls == 1


def test_detaching_the_last_watcher_unsubscribes_from_every_cell():
    cells = [Cell(i) for i in range(5)]
    _, reads = capture(lambda: sum(c.get() for c in cells))
    first, second = Counter(), Counter()
    reads.attach(first)
    reads.attach(second)
    assert all(reads in c.readsets for c in cells)
    reads.detach(first)
    assert all(reads in c.readsets for c in cells)
    reads.detach(second)
    assert all(not c.readsets for c in cells)


def test_empty_read_set_is_always_valid():
    assert ReadSet({}).valid()
