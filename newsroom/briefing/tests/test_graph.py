"""The server-side layout and SVG: pure, no database."""

from __future__ import annotations

from newsroom.briefing.graph import (
    HEIGHT,
    WIDTH,
    build_graph,
    category_colours,
    layout,
    render_svg,
)


def _events(n: int) -> list[dict]:
    return [
        {
            "key": f"e{k}",
            "headline": f"Event <{k}> & co",
            "category": k % 3,
            "category_name": f"Cat {k % 3}",
            "importance": 1.0 / (k + 1),
            "sources": ["A", "B"][: 1 + k % 2],
        }
        for k in range(n)
    ]


def test_the_layout_is_deterministic_and_inside_the_canvas():
    edges = [(0, 1, 1.0), (1, 2, 0.6), (3, 4, 1.0)]
    first = layout(8, edges)
    assert first == layout(8, edges)
    assert all(0 <= x <= WIDTH and 0 <= y <= HEIGHT for x, y in first)
    assert len(set(first)) == 8  # no two nodes on the same spot


def test_linked_events_sit_closer_than_unlinked_ones():
    pos = layout(6, [(0, 1, 2.0)])

    def dist(a, b):
        return ((pos[a][0] - pos[b][0]) ** 2 + (pos[a][1] - pos[b][1]) ** 2) ** 0.5

    assert dist(0, 1) < min(dist(0, k) for k in range(2, 6))


def test_the_svg_escapes_labels_links_nodes_and_colours_by_category():
    events = _events(5)
    edges = [
        {
            "a": "e0",
            "b": "e1",
            "kind": "names",
            "shared": ["Japan"],
            "label": "Both involve Japan",
            "weight": 0.6,
        }
    ]
    colours = category_colours([0, 1, 2])
    svg = render_svg(build_graph(events, edges, colours))
    assert svg.count('<a href="#event-') == 5
    assert "Event &lt;0&gt; &amp; co" in svg and "<0>" not in svg
    assert "<title>Both involve Japan</title>" in svg
    assert f'fill="{colours[0]}"' in svg and f'fill="{colours[1]}"' in svg
    assert "style=" not in svg


def test_only_the_most_important_events_are_drawn():
    graph = build_graph(_events(45), [], category_colours([0, 1, 2]))
    assert len(graph["nodes"]) == 30
    assert [n["key"] for n in graph["nodes"]] == [f"e{k}" for k in range(30)]
