from __future__ import annotations

import pytest

from newsroom.live.cells import Cell
from newsroom.live.render import (
    ComponentCache,
    Fragment,
    Part,
    as_output,
    component,
    fragment,
    patch,
    render_page,
    using_cache,
)


class Board:
    """A board of rows, each row a cell; `rows` lists the row ids (structure)."""

    def __init__(self, n: int) -> None:
        self.rows = Cell(list(range(n)))
        self.cells = {i: Cell(f"row {i}") for i in range(n)}
        self.renders: dict[int, int] = {}
        self.title = Cell("Board")

    def add(self, i: int) -> None:
        self.cells[i] = Cell(f"row {i}")
        self.rows.set([*self.rows.peek(), i])


def row(board: Board, i: int) -> str:
    board.renders[i] = board.renders.get(i, 0) + 1
    return f'<li id="row-{i}">{board.cells[i].get()}</li>'


def region(board: Board) -> Fragment:
    return fragment(
        f'<div id="board"><h2>{board.title.get()}</h2><ul>',
        [component(row, board, i) for i in board.rows.get()],
        "</ul></div>",
    )


# -- parts ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "html, part_id",
    [
        ('<li id="a">x</li>', "a"),
        ('<div class="c" id="b"><span>1</span><br></div>', "b"),
        ('  <section data-x="1" id="c"><div></div></section>\n', "c"),
        ('<li id="a">x</li><li id="b">y</li>', None),  # two roots: structure
        ("<li>x</li>", None),  # no id: structure
        ("plain text", None),
    ],
)
def test_a_component_is_a_part_only_when_its_single_root_has_an_id(html, part_id):
    out = as_output(html)
    if part_id is None:
        assert isinstance(out, Fragment)
    else:
        assert isinstance(out, Part) and out.id == part_id and out.html == html


def test_fragment_flattens_and_joins_static_text():
    part = Part("p", '<b id="p">1</b>')
    frag = fragment("<a>", ["<b>", part, fragment("</b>", None, "")], "</a>")
    assert frag.segments == ("<a><b>", part, "</b></a>")
    assert frag.html == '<a><b><b id="p">1</b></b></a>'
    assert frag.shape == ("<a><b>", "\0p", "</b></a>")


# -- cache --------------------------------------------------------------------------


def test_cache_admits_an_entry_on_its_second_request():
    board = Board(1)
    cache = ComponentCache()
    with using_cache(cache):
        first = component(row, board, 0)
        assert len(cache) == 0  # seen once: not admitted
        second = component(row, board, 0)
        assert len(cache) == 1
        third = component(row, board, 0)
    assert board.renders[0] == 2
    assert third is second and first is not second
    assert cache.hits == 1


def test_cache_entry_is_valid_while_its_cells_keep_their_versions():
    board = Board(2)
    cache = ComponentCache()
    with using_cache(cache):
        component(row, board, 0)
        kept = component(row, board, 0)
        board.cells[1].set("other row changed")
        assert component(row, board, 0) is kept
        board.cells[0].set("changed")
        fresh = component(row, board, 0)
        assert fresh is not kept and "changed" in fresh.html
        assert component(row, board, 0) is fresh
    assert board.renders[0] == 3


def test_cache_keys_on_the_component_and_its_args():
    board = Board(2)
    cache = ComponentCache()
    with using_cache(cache):
        for _ in range(3):
            a = component(row, board, 0)
            b = component(row, board, 1)
    assert a.id == "row-0" and b.id == "row-1"
    assert board.renders == {0: 2, 1: 2}


def test_cache_evicts_by_generation():
    board = Board(10)
    cache = ComponentCache(capacity=4)  # generations of two entries
    with using_cache(cache):
        for i in (0, 0, 1, 1):
            component(row, board, i)  # 0 and 1 admitted: young is full
        for i in (2, 2):
            component(row, board, i)  # young -> old; 2 in the new young
        component(row, board, 0)  # hit in old: moved back to young
        assert board.renders[0] == 2
        for i in (3, 3, 4, 4):
            component(row, board, i)  # two more generations turn over
        component(row, board, 1)  # 1 was never used again: evicted
        assert board.renders[1] == 3


def test_a_hundred_streams_cost_one_render_per_component():
    board = Board(300)
    cache = ComponentCache()
    with using_cache(cache):
        for _ in range(100):
            render_page(region, board)
        board.renders.clear()
        board.cells[7].set("changed")
        pages = [render_page(region, board)[0] for _ in range(100)]
    assert board.renders == {7: 1}
    assert all(p is pages[0] for p in pages)


def test_a_page_watches_what_its_cached_components_read():
    board = Board(3)
    cache = ComponentCache()
    with using_cache(cache):
        for _ in range(3):
            page, reads = render_page(region, board)
    assert board.cells[2] in reads and board.rows in reads
    board.cells[2].set("x")
    assert not reads.valid()


# -- patches ---------------------------------------------------------------------------


def pages(board: Board, cache: ComponentCache, change) -> tuple[Fragment, Fragment]:
    with using_cache(cache):
        for _ in range(2):
            render_page(region, board)
        before = render_page(region, board)[0]
        change()
        after = render_page(region, board)[0]
    return before, after


def test_patch_holds_only_the_part_that_changed():
    board = Board(50)
    before, after = pages(board, ComponentCache(), lambda: board.cells[20].set("new"))
    html, full = patch(before, after)
    assert not full
    assert html == '<li id="row-20">new</li>'


def test_patch_sends_the_region_when_a_row_is_added():
    board = Board(5)
    before, after = pages(board, ComponentCache(), lambda: board.add(5))
    html, full = patch(before, after)
    assert full and html == after.html and html.startswith('<div id="board">')


def test_patch_sends_the_region_when_text_outside_parts_changes():
    board = Board(5)
    before, after = pages(board, ComponentCache(), lambda: board.title.set("Renamed"))
    html, full = patch(before, after)
    assert full and "Renamed" in html


def test_patch_is_none_when_nothing_visible_changed():
    board = Board(5)
    before, after = pages(board, ComponentCache(), lambda: board.cells[1].set("row 1"))
    assert after is not before
    assert patch(before, after) is None


def test_a_client_with_nothing_gets_the_whole_region():
    board = Board(3)
    page = render_page(region, board)[0]
    assert patch(None, page) == (page.html, True)


class CountingHtml(str):
    comparisons = 0

    def __eq__(self, other):
        CountingHtml.comparisons += 1
        return str.__eq__(self, other)

    def __ne__(self, other):
        CountingHtml.comparisons += 1
        return str.__ne__(self, other)

    __hash__ = str.__hash__


def test_unchanged_cached_parts_are_skipped_by_identity():
    shared = [
        Part(f"r{i}", CountingHtml(f'<li id="r{i}">{i}</li>')) for i in range(300)
    ]
    changed = Part("r7", CountingHtml('<li id="r7">seven</li>'))
    before = Fragment(("<ul>", *shared, "</ul>"))
    after = Fragment(("<ul>", *shared[:7], changed, *shared[8:], "</ul>"))
    CountingHtml.comparisons = 0
    html, full = patch(before, after)
    assert (html, full) == ('<li id="r7">seven</li>', False)
    assert CountingHtml.comparisons == 1  # only the re-rendered part


def test_many_streams_with_the_same_pages_share_one_comparison():
    board = Board(20)
    before, after = pages(board, ComponentCache(), lambda: board.cells[3].set("x"))
    first = patch(before, after)
    assert patch(before, after) is first


def test_forget_drops_the_entries_of_one_object():
    kept, dropped = Board(2), Board(2)
    cache = ComponentCache()
    with using_cache(cache):
        for board in (kept, dropped, kept, dropped):
            component(row, board, 0)
            component(row, board, 1)
    assert len(cache) == 4
    assert cache.forget(dropped) == 2
    assert len(cache) == 2 and all(k[1][0] is kept for k in cache.young)
