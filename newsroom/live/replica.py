"""A process-local replica of a run's status, exposed as cells.

Each change from the run's group is applied to a `RunStatus` replica (in seq
order; a gap means reload the snapshot) and touches only the cells of what it
changed: the one source row, the totals when a state moved, the category it
belongs to, the log, the model progress. A render that reads one row watches one
cell. Per-category state counts are kept here incrementally from the changes,
beside RunStatus's own counts by state and items by category. Pure Python.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from newsroom.live.cells import Cell
from newsroom.runs.status import RunStatus

UNCATEGORISED = "Uncategorised"


def category_of(entry: dict[str, Any]) -> str:
    return entry.get("category") or UNCATEGORISED


class RunReplica:
    def __init__(self, status: RunStatus, category_order: list[str] | tuple = ()) -> None:
        self.status = status
        # The reader's own category order (as on the dashboard); others by name.
        self.category_rank = {name: rank for rank, name in enumerate(category_order)}
        self.run_id = status.run_id
        self.reader_id = status.reader_id
        self.structure = Cell(name=f"run{self.run_id}.structure")
        self.head = Cell(name=f"run{self.run_id}.head")
        self.totals = Cell(name=f"run{self.run_id}.totals")
        self.model = Cell(name=f"run{self.run_id}.model")
        self.log = Cell(name=f"run{self.run_id}.log")
        self.source_cells: dict[int, Cell] = {}
        self.category_cells: dict[str, Cell] = {}
        self.category_counts: dict[str, Counter[str]] = {}
        self._layout: list[tuple[str, list[int]]] | None = None
        self._recount()

    def __repr__(self) -> str:
        return f"<RunReplica run={self.run_id} seq={self.status.seq}>"

    @property
    def seq(self) -> int:
        return self.status.seq

    # -- cells ------------------------------------------------------------------

    def source_cell(self, source_id: int) -> Cell:
        cell = self.source_cells.get(source_id)
        if cell is None:
            cell = self.source_cells[source_id] = Cell(
                name=f"run{self.run_id}.src{source_id}"
            )
        return cell

    def category_cell(self, name: str) -> Cell:
        cell = self.category_cells.get(name)
        if cell is None:
            cell = self.category_cells[name] = Cell(name=f"run{self.run_id}.cat:{name}")
        return cell

    def cells(self) -> list[Cell]:
        return [
            self.structure,
            self.head,
            self.totals,
            self.model,
            self.log,
            *self.source_cells.values(),
            *self.category_cells.values(),
        ]

    def layout(self) -> list[tuple[str, list[int]]]:
        """Categories in the reader's order (unknown ones by name, uncategorised
        last), each with its source ids in title order. Recomputed only when the
        set of sources changed."""
        if self._layout is None:
            groups: dict[str, list[int]] = {}
            for sid, entry in self.status.sources.items():
                groups.setdefault(category_of(entry), []).append(sid)
            sources = self.status.sources
            self._layout = [
                (
                    name,
                    sorted(ids, key=lambda i: ((sources[i]["title"] or "").lower(), i)),
                )
                for name, ids in sorted(groups.items(), key=self._category_key)
            ]
        return self._layout

    def _category_key(self, group: tuple[str, list[int]]) -> tuple:
        name = group[0]
        rank = self.category_rank.get(name, len(self.category_rank))
        return (name == UNCATEGORISED, rank, name.lower())

    # -- changes -----------------------------------------------------------------

    def apply(self, change: dict[str, Any]) -> bool:
        """Apply one change from the run's group. False on a gap (reload needed);
        an old change is ignored and returns True."""
        status = self.status
        seq = change.get("seq", 0)
        if seq <= status.seq:
            return True
        if seq != status.seq + 1:
            return False
        before: dict[str, Any] | None = None
        part = change.get("source") or change.get("add")
        if part is not None:
            old = status.sources.get(part["id"])
            before = dict(old) if old is not None else None
        status.apply(change)
        if part is not None:
            self._source_moved(part["id"], before)
        if "fold" in change:
            self.totals.touch()
            category = change["fold"].get("category")
            if category and category in self.category_cells:
                self.category_cells[category].touch()
        if "model" in change:
            self.model.touch()
        if "run_state" in change:
            self.head.touch()
        if "log" in change:
            self.log.touch()
        return True

    def _source_moved(self, source_id: int, before: dict[str, Any] | None) -> None:
        after = self.status.sources[source_id]
        self.source_cell(source_id).touch()
        old_cat = category_of(before) if before is not None else None
        new_cat = category_of(after)
        old_state = before["state"] if before is not None else None
        if (
            before is None
            or old_cat != new_cat
            or before.get("title") != after.get("title")
        ):
            self._layout = None
            self.structure.touch()
        if old_cat != new_cat or old_state != after["state"]:
            if old_cat is not None:
                self.category_counts[old_cat][old_state] -= 1  # type: ignore[index]
                self.category_cell(old_cat).touch()
            self.category_counts.setdefault(new_cat, Counter())[after["state"]] += 1
            self.category_cell(new_cat).touch()
            self.totals.touch()

    def load(self, status: RunStatus) -> None:
        """Replace the replica with a snapshot (after a gap): every cell changes."""
        self.status = status
        self._recount()
        for cell in self.cells():
            cell.touch()

    def _recount(self) -> None:
        # Only when a snapshot is loaded; changes keep the counts incrementally.
        self._layout = None
        self.category_counts = {}
        for sid, entry in self.status.sources.items():
            self.source_cell(sid)
            self.category_cell(category_of(entry))
            self.category_counts.setdefault(category_of(entry), Counter())[
                entry["state"]
            ] += 1
