"""The event graph: a deterministic force layout and its inline SVG.

Pure: no Django, no JavaScript. The layout runs on the server when the
briefing is written and is stored with it, so the page draws the same picture
every time. The SVG uses presentation attributes only (fill=, stroke=): the
page's CSP forbids inline style attributes.
"""

from __future__ import annotations

import math
from html import escape

import numpy as np

PALETTE = [
    "#2f5bea",
    "#e8590c",
    "#0f9d58",
    "#9c36b5",
    "#d6336c",
    "#1098ad",
    "#f59f00",
    "#5c940d",
    "#364fc7",
    "#495057",
]
# Room a node needs with its label under it: labels are wide and short.
LABEL_W, LABEL_H = 200.0, 72.0
WIDTH, HEIGHT = 860, 520
MAX_NODES = 30


def category_colours(category_ids: list[int | None]) -> dict[int | None, str]:
    """A stable colour per category in the order given (the reader's order)."""
    colours: dict[int | None, str] = {}
    for cid in category_ids:
        if cid not in colours:
            colours[cid] = (
                PALETTE[len(colours) % len(PALETTE)] if cid is not None else "#868e96"
            )
    return colours


def layout(
    n: int,
    edges: list[tuple[int, int, float]],
    width: float = WIDTH,
    height: float = HEIGHT,
    iterations: int = 300,
) -> list[tuple[float, float]]:
    """Fruchterman-Reingold from a fixed start (a sunflower spiral by node
    order), cooling linearly: the same graph always gets the same picture."""
    if n == 0:
        return []
    if n == 1:
        return [(width / 2, height / 2)]
    margin = 70.0
    golden = math.pi * (3 - math.sqrt(5))
    pos = np.array(
        [
            (
                math.sqrt((k + 0.5) / n) * math.cos(k * golden),
                math.sqrt((k + 0.5) / n) * math.sin(k * golden),
            )
            for k in range(n)
        ]
    )
    pos[:, 0] *= (width - 2 * margin) / 2
    pos[:, 1] *= (height - 2 * margin) / 2
    area = (width - 2 * margin) * (height - 2 * margin)
    k = math.sqrt(area / n) * 0.8
    temperature = width / 8
    adjacency = np.zeros((n, n))
    for a, b, w in edges:
        adjacency[a, b] = adjacency[b, a] = max(adjacency[a, b], min(2.0, 0.5 + w))
    for step in range(iterations):
        delta = pos[:, None, :] - pos[None, :, :]
        dist = np.linalg.norm(delta, axis=2)
        np.fill_diagonal(dist, 1.0)
        dist = np.maximum(dist, 0.01)
        repulse = (k * k / dist**2)[:, :, None] * delta
        attract = (adjacency * dist / k)[:, :, None] * delta
        # A gentle pull to the middle keeps lonely nodes on the canvas.
        gravity = -0.02 * pos * (1 + step / iterations)
        force = (repulse - attract).sum(axis=1) + gravity * k / 10
        length = np.maximum(np.linalg.norm(force, axis=1, keepdims=True), 1e-9)
        pos += force / length * np.minimum(length, temperature)
        temperature = max(1.0, temperature * (1 - 1 / iterations) - 0.05)
    # Fit the result into the canvas.
    lo, hi = pos.min(axis=0), pos.max(axis=0)
    span = np.maximum(hi - lo, 1e-9)
    scale = min((width - 2 * margin) / span[0], (height - 2 * margin) / span[1])
    centre = (lo + hi) / 2
    fitted = (pos - centre) * scale + np.array([width / 2, height / 2])
    fitted = _separate(fitted, width, height, margin)
    return [(round(float(x), 1), round(float(y), 1)) for x, y in fitted]


def _separate(
    pos: np.ndarray, width: float, height: float, margin: float
) -> np.ndarray:
    """Push apart nodes whose label boxes overlap, along the axis that needs the
    smaller move, so linked nodes do not sit on each other."""
    pos = pos.copy()
    n = len(pos)
    if n < 2:
        return pos
    upper = np.triu(np.ones((n, n), dtype=bool), k=1)
    for _ in range(120):
        delta = pos[None, :, :] - pos[:, None, :]  # delta[a, b] = pos[b] - pos[a]
        ox = LABEL_W - np.abs(delta[:, :, 0])
        oy = LABEL_H - np.abs(delta[:, :, 1])
        overlap = (ox > 0) & (oy > 0) & upper
        if not overlap.any():
            break
        # Prefer vertical moves: labels are much wider than tall.
        vertical = oy * 2.2 < ox
        sign_x = np.where(delta[:, :, 0] >= 0, 1.0, -1.0)
        sign_y = np.where(delta[:, :, 1] >= 0, 1.0, -1.0)
        shift = np.zeros((n, n, 2))
        shift[:, :, 1] = np.where(overlap & vertical, (oy / 2 + 0.5) * sign_y, 0.0)
        shift[:, :, 0] = np.where(overlap & ~vertical, (ox / 2 + 0.5) * sign_x, 0.0)
        # Each pair moves half its overlap per round; b away from a, a away from b.
        pos += 0.5 * (shift.sum(axis=0) - shift.sum(axis=1))
        pos[:, 0] = np.clip(pos[:, 0], margin + 30, width - margin - 30)
        pos[:, 1] = np.clip(pos[:, 1], margin - 30, height - margin + 10)
    return pos


def build_graph(
    events: list[dict], edges: list[dict], colours: dict[int | None, str]
) -> dict:
    """The stored graph: the most important events, their edges, positions."""
    shown = events[:MAX_NODES]
    index = {e["key"]: n for n, e in enumerate(shown)}
    kept = [e for e in edges if e["a"] in index and e["b"] in index]
    positions = layout(
        len(shown), [(index[e["a"]], index[e["b"]], e["weight"]) for e in kept]
    )
    top = max((e["importance"] for e in shown), default=1.0) or 1.0
    nodes = []
    for event, (x, y) in zip(shown, positions, strict=True):
        nodes.append(
            {
                "key": event["key"],
                "label": event["headline"],
                "category": event["category_name"],
                "colour": colours.get(event["category"], "#868e96"),
                "x": x,
                "y": y,
                "r": round(9 + 13 * math.sqrt(event["importance"] / top), 1),
                "sources": len(event["sources"]),
            }
        )
    return {
        "width": WIDTH,
        "height": HEIGHT,
        "nodes": nodes,
        "edges": kept,
        "all_edges": len(edges),
    }


def _short(text: str, limit: int = 30) -> str:
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


def render_svg(graph: dict) -> str:
    """Inline SVG for the stored graph; each node links to its event's anchor."""
    nodes = {n["key"]: n for n in graph.get("nodes", [])}
    width, height = graph.get("width", WIDTH), graph.get("height", HEIGHT)
    parts = [
        f'<svg class="event-graph" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="How the events connect" xmlns="http://www.w3.org/2000/svg">'
    ]
    parts.append('<g class="edges">')
    for edge in graph.get("edges", []):
        a, b = nodes[edge["a"]], nodes[edge["b"]]
        dash = ' stroke-dasharray="5 4"' if edge["kind"] == "meaning" else ""
        stroke = "#98a2b3" if edge["kind"] == "meaning" else "#667085"
        parts.append(
            f'<line x1="{a["x"]}" y1="{a["y"]}" x2="{b["x"]}" y2="{b["y"]}" stroke="{stroke}" '
            f'stroke-width="{1.2 + min(2.0, edge["weight"]):.1f}" stroke-opacity="0.7"{dash}>'
            f"<title>{escape(edge['label'])}</title></line>"
        )
    parts.append('</g><g class="nodes">')
    for node in graph.get("nodes", []):
        label = escape(_short(node["label"]))
        tip = escape(
            f"{node['label']} · {node['category'] or 'Uncategorised'} · {node['sources']} sources"
        )
        anchor_y = node["y"] + node["r"] + 14
        parts.append(
            f'<a href="#event-{escape(node["key"])}" class="node">'
            f"<title>{tip}</title>"
            f'<circle cx="{node["x"]}" cy="{node["y"]}" r="{node["r"]}" fill="{node["colour"]}" '
            f'fill-opacity="0.9" stroke="#ffffff" stroke-width="2"/>'
            f'<text x="{node["x"]}" y="{node["y"] + 4}" text-anchor="middle" fill="#ffffff" '
            f'font-size="11" font-weight="700">{node["sources"]}</text>'
            f'<text x="{node["x"]}" y="{anchor_y}" text-anchor="middle" fill="#1d2330" '
            f'font-size="11" paint-order="stroke" stroke="#ffffff" stroke-width="3">{label}</text>'
            "</a>"
        )
    parts.append("</g></svg>")
    return "".join(parts)


def legend(graph: dict) -> list[tuple[str, str]]:
    """(category, colour) pairs for the nodes drawn, in order of first use."""
    seen: dict[str, str] = {}
    for node in graph.get("nodes", []):
        seen.setdefault(node["category"] or "Uncategorised", node["colour"])
    return list(seen.items())
