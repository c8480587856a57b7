"""A run's status: per-source state, counts, the event log, model progress.

One object per run. While the run works it lives in memory in the process that
executes it; every change is ONE atomic write that returns a *change* message
(a plain dict) carrying everything it touched: the source's new state, count,
timing and its log line together, so no reader can see "ok, 12 items" before the
log says so. The same message, sent over the channel layer to the run's group,
lets other processes keep replicas (`apply`). `seq` numbers the changes; a
replica that sees a gap reloads the snapshot (`to_json`, saved in Run.status).

Counts by state and items by category are kept incrementally from the changes,
never recounted from the whole set.
"""

from __future__ import annotations

import copy
from collections import Counter, deque
from datetime import UTC, datetime
from typing import Any

LOG_LIMIT = 200
SOURCE_STATES = ("queued", "fetching", "ok", "not_modified", "error")
DONE_STATES = frozenset({"ok", "not_modified", "error"})

Change = dict[str, Any]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class RunStatus:
    def __init__(self, run_id: int, reader_id: int, run_state: str = "queued") -> None:
        self.run_id = run_id
        self.reader_id = reader_id
        self.run_state = run_state
        self.seq = 0
        self.sources: dict[int, dict[str, Any]] = {}
        self.counts: Counter[str] = Counter()
        self.items_by_category: Counter[str] = Counter()
        self.items = 0
        self.new_items = 0
        self.log: deque[dict[str, Any]] = deque(maxlen=LOG_LIMIT)
        self.model: dict[str, Any] = {}

    # -- writes: each returns the change it made --------------------------------

    def add_source(
        self, source_id: int, title: str, category: str = "", kind: str = "feed"
    ) -> Change:
        entry = {
            "id": source_id,
            "title": title,
            "category": category,
            "kind": kind,
            "state": "queued",
            "count": None,
            "new": None,
            "ms": None,
            "error": "",
        }
        return self._commit({"add": entry})

    def report(
        self,
        source_id: int,
        state: str,
        *,
        message: str,
        count: int | None = None,
        ms: int | None = None,
        error: str = "",
        level: str | None = None,
    ) -> Change:
        """One source's state, count, timing and log line, written together."""
        if state not in SOURCE_STATES:
            raise ValueError(f"unknown source state {state!r}")
        level = level or ("error" if state == "error" else "info")
        part = {"id": source_id, "state": state, "ms": ms, "error": error}
        if count is not None:
            part["count"] = count
        line = {"t": _now(), "level": level, "source": source_id, "msg": message}
        return self._commit({"source": part, "log": line})

    def fold_outcome(self, source_id: int, items: int, new: int, category: str = "") -> Change:
        part = {"id": source_id, "count": items, "new": new}
        return self._commit({"source": part, "fold": {"items": items, "new": new, "category": category}})

    def set_model(self, progress: dict[str, Any], message: str | None = None) -> Change:
        change: Change = {"model": progress}
        if message:
            change["log"] = {"t": _now(), "level": "info", "source": None, "msg": message}
        return self._commit(change)

    def set_run_state(self, run_state: str, message: str, level: str = "info") -> Change:
        line = {"t": _now(), "level": level, "source": None, "msg": message}
        return self._commit({"run_state": run_state, "log": line})

    def note(self, message: str, level: str = "info") -> Change:
        return self._commit({"log": {"t": _now(), "level": level, "source": None, "msg": message}})

    def _commit(self, body: Change) -> Change:
        change = {"run": self.run_id, "reader": self.reader_id, "seq": self.seq + 1, **body}
        self._apply_body(change)
        self.seq = change["seq"]
        return change

    # -- replicas ----------------------------------------------------------------

    def apply(self, change: Change) -> bool:
        """Apply a change made elsewhere. False if it is not the next one (a gap:
        reload the snapshot); an already-seen change is ignored and returns True."""
        if change["seq"] <= self.seq:
            return True
        if change["seq"] != self.seq + 1:
            return False
        self._apply_body(change)
        self.seq = change["seq"]
        return True

    def _apply_body(self, change: Change) -> None:
        if "add" in change:
            entry = dict(change["add"])
            old = self.sources.get(entry["id"])
            if old is not None:
                self.counts[old["state"]] -= 1
            self.sources[entry["id"]] = entry
            self.counts[entry["state"]] += 1
        if "source" in change:
            part = change["source"]
            entry = self.sources.setdefault(
                part["id"],
                {"id": part["id"], "title": "", "category": "", "kind": "feed",
                 "state": "queued", "count": None, "new": None, "ms": None, "error": ""},
            )
            if "state" in part and part["state"] != entry["state"]:
                self.counts[entry["state"]] -= 1
                self.counts[part["state"]] += 1
            entry.update({k: v for k, v in part.items() if k != "id"})
        if "fold" in change:
            fold = change["fold"]
            self.items += fold["items"]
            self.new_items += fold["new"]
            if fold.get("category"):
                self.items_by_category[fold["category"]] += fold["new"]
        if "model" in change:
            self.model = dict(change["model"])
        if "run_state" in change:
            self.run_state = change["run_state"]
        if "log" in change:
            self.log.append(change["log"])

    # -- reads -------------------------------------------------------------------

    def done_ids(self) -> set[int]:
        return {sid for sid, s in self.sources.items() if s["state"] in DONE_STATES}

    def to_json(self) -> dict[str, Any]:
        return {
            "run": self.run_id,
            "reader": self.reader_id,
            "seq": self.seq,
            "run_state": self.run_state,
            "sources": [copy.copy(s) for s in self.sources.values()],
            "items": self.items,
            "new_items": self.new_items,
            "items_by_category": dict(self.items_by_category),
            "log": list(self.log),
            "model": dict(self.model),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], run_id: int, reader_id: int) -> RunStatus:
        status = cls(run_id, reader_id, data.get("run_state", "queued"))
        status.seq = data.get("seq", 0)
        for entry in data.get("sources", []):
            status.sources[entry["id"]] = dict(entry)
            status.counts[entry["state"]] += 1
        status.items = data.get("items", 0)
        status.new_items = data.get("new_items", 0)
        status.items_by_category.update(data.get("items_by_category", {}))
        status.log.extend(data.get("log", []))
        status.model = dict(data.get("model", {}))
        return status
