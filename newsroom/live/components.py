"""The live regions and their components: the run sidebar and the article.

Components are plain functions of hashable args returning HTML. Each one whose
root element has an id is a part a patch can send alone: a source row, a
category header, the totals, the log, the model progress. The region roots keep
the same id whatever they show (`live-sidebar`, `live-article`), so a whole-region
frame always finds its place. Inline styles are not allowed (CSP), so bars are
<progress> elements.
"""

from __future__ import annotations

from html import escape
from typing import Any

from newsroom.live.render import Fragment, component, fragment
from newsroom.live.replica import RunReplica
from newsroom.runs.status import DONE_STATES

SIDEBAR_ID = "live-sidebar"
ARTICLE_ID = "live-article"
LOG_LINES = 8

STATE_LABELS = {
    "queued": "queued",
    "fetching": "fetching",
    "ok": "ok",
    "not_modified": "unchanged",
    "error": "error",
}
RUN_LABELS = {
    "queued": "Queued",
    "running": "Running",
    "interrupted": "Interrupted",
    "done": "Done",
    "failed": "Failed",
}


class ReaderView:
    """What a reader's regions read: their latest run and their latest briefing.

    `latest_run` holds a RunReplica (or None); `article` holds the latest
    briefing as plain data (or None) and is set whenever one is stored, which is
    the reader's article counter: its version counts the stored briefings seen.
    """

    def __init__(
        self, reader_id: int, run: RunReplica | None, briefing: dict | None
    ) -> None:
        from newsroom.live.cells import Cell

        self.reader_id = reader_id
        self.latest_run = Cell(run, name=f"reader{reader_id}.run")
        self.article = Cell(briefing, name=f"reader{reader_id}.article")

    def __repr__(self) -> str:
        return f"<ReaderView {self.reader_id}>"


# -- the sidebar -------------------------------------------------------------------


def dashboard_sidebar(reader: ReaderView) -> Any:
    replica = reader.latest_run.get()
    if replica is None:
        return (
            f'<div id="{SIDEBAR_ID}" class="live">'
            '<div class="live-empty"><h2>Activity</h2>'
            '<p class="muted">No runs yet. Press <b>Run now</b> to collect every '
            "source; its progress appears here as it works.</p></div></div>"
        )
    return component(run_sidebar, replica)


def run_sidebar(replica: RunReplica) -> Fragment:
    replica.structure.get()
    groups = []
    for index, (name, ids) in enumerate(replica.layout()):
        groups.append(
            fragment(
                '<section class="live-cat">',
                component(category_head, replica, name, index),
                '<ul class="live-rows">',
                [component(source_row, replica, sid) for sid in ids],
                "</ul></section>",
            )
        )
    return fragment(
        f'<div id="{SIDEBAR_ID}" class="live" data-run="{replica.run_id}">',
        component(run_head, replica),
        component(run_totals, replica),
        component(model_progress, replica),
        component(run_log, replica),
        '<div class="live-sources">' if groups else "",
        groups,
        "</div>" if groups else "",
        "</div>",
    )


def run_head(replica: RunReplica) -> str:
    replica.head.get()
    state = replica.status.run_state
    run = replica.run_id
    return (
        f'<div id="live-head-{run}" class="live-head">'
        f'<h2><a href="/runs/{run}/">Run #{run}</a></h2>'
        f'<span class="badge state-{escape(state)}">{escape(RUN_LABELS.get(state, state))}</span>'
        "</div>"
    )


def run_totals(replica: RunReplica) -> str:
    replica.totals.get()
    status = replica.status
    counts = status.counts
    total = len(status.sources)
    done = sum(counts[s] for s in DONE_STATES)
    stats = "".join(
        f'<div class="live-stat is-{key}"><b>{counts[key]}</b><span>{label}</span></div>'
        for key, label in (
            ("ok", "ok"),
            ("not_modified", "unchanged"),
            ("error", "failed"),
            ("fetching", "fetching"),
            ("queued", "waiting"),
        )
    )
    return (
        f'<div id="live-totals-{replica.run_id}" class="live-totals">'
        f'<div class="live-progress"><progress max="{max(total, 1)}" value="{done}"></progress>'
        f'<span class="live-done">{done} / {total} sources</span></div>'
        f'<div class="live-stats">{stats}</div>'
        f'<p class="live-items"><b>{status.items}</b> items · <b>{status.new_items}</b> new</p>'
        "</div>"
    )


def model_progress(replica: RunReplica) -> str:
    replica.model.get()
    model = replica.status.model
    run = replica.run_id
    if not model:
        body = '<p class="muted">The briefing is written when the run finishes.</p>'
    else:
        stage = escape(str(model.get("stage") or "working"))
        words = model.get("words")
        heading = model.get("heading")
        engine = model.get("engine")
        body = (
            f'<p class="live-model-stage"><span class="badge state-running">{stage}</span>'
            + (f" <b>{int(words)}</b> words" if isinstance(words, (int, float)) else "")
            + "</p>"
            + (
                f'<p class="live-model-heading">{escape(str(heading))}</p>'
                if heading
                else ""
            )
            + (f'<p class="hint">{escape(str(engine))}</p>' if engine else "")
        )
    return (
        f'<div id="live-model-{run}" class="live-model"><h3>Briefing</h3>{body}</div>'
    )


def run_log(replica: RunReplica) -> str:
    replica.log.get()
    lines = list(replica.status.log)[-LOG_LINES:]
    items = "".join(
        f'<li class="lvl-{escape(str(line.get("level", "info")))}">'
        f"<time>{escape(str(line.get('t', ''))[11:19])}</time>"
        f"<span>{escape(str(line.get('msg', '')))}</span></li>"
        for line in reversed(lines)
    )
    if not items:
        items = '<li class="muted">Nothing logged yet.</li>'
    return (
        f'<div id="live-log-{replica.run_id}" class="live-log"><h3>Log</h3>'
        f"<ol>{items}</ol></div>"
    )


def category_head(replica: RunReplica, name: str, index: int) -> str:
    replica.category_cell(name).get()
    counts = replica.category_counts.get(name)
    total = sum(counts.values()) if counts else 0
    done = sum(counts[s] for s in DONE_STATES) if counts else 0
    failed = counts["error"] if counts else 0
    new = replica.status.items_by_category.get(name, 0)
    meta = f"{done}/{total}"
    if failed:
        meta += f' · <span class="bad">{failed} failed</span>'
    if new:
        meta += f" · {new} new"
    return (
        f'<h3 id="live-cat-{replica.run_id}-{index}" class="live-cat-head">'
        f'{escape(name)}<span class="live-cat-meta">{meta}</span></h3>'
    )


def source_row(replica: RunReplica, source_id: int) -> str:
    replica.source_cell(source_id).get()
    entry = replica.status.sources[source_id]
    state = entry["state"]
    count = entry.get("count")
    new = entry.get("new")
    ms = entry.get("ms")
    detail = ""
    if count is not None:
        detail = f"{count}" + (f" <i>+{new}</i>" if new else "")
    timing = (
        f"{ms / 1000:.1f} s"
        if isinstance(ms, (int, float)) and ms >= 1000
        else (f"{int(ms)} ms" if isinstance(ms, (int, float)) else "")
    )
    error = entry.get("error") or ""
    title = escape(entry.get("title") or f"Source {source_id}")
    return (
        f'<li id="live-src-{replica.run_id}-{source_id}" class="live-row is-{escape(state)}"'
        + (f' title="{escape(error)}"' if error else "")
        + f'><span class="dot"></span><span class="name">{title}</span>'
        f'<span class="num">{detail}</span><span class="ms">{timing}</span>'
        f'<span class="st">{STATE_LABELS.get(state, escape(state))}</span>'
        + (f'<span class="err">{escape(error)}</span>' if error else "")
        + "</li>"
    )


# -- the article -------------------------------------------------------------------


def article_region(reader: ReaderView) -> str:
    briefing = reader.article.get()
    if not briefing:
        body = (
            '<div class="live-empty"><h2>Today’s briefing</h2><p class="muted">'
            "No briefing yet. It is written after a run collects your sources.</p></div>"
        )
    else:
        paragraphs = []
        for block in (briefing.get("text") or "").split("\n\n")[:6]:
            block = block.strip()
            if not block:
                continue
            if block.startswith("#"):
                paragraphs.append(f"<h3>{escape(block.lstrip('#').strip())}</h3>")
            else:
                paragraphs.append(f"<p>{escape(block)}</p>")
        meta = " · ".join(
            escape(str(v))
            for v in (briefing.get("engine"), briefing.get("created"))
            if v
        )
        link = (
            f'<a class="button" href="{escape(briefing["url"])}">Read the briefing</a>'
            if briefing.get("url")
            else ""
        )
        body = (
            f'<header class="live-article-head"><h2>{escape(briefing.get("title") or "Briefing")}</h2>'
            f'<span class="hint">{meta}</span></header>'
            f'<div class="live-article-body">{"".join(paragraphs)}</div>{link}'
        )
    return f'<section id="{ARTICLE_ID}" class="card live-article">{body}</section>'
