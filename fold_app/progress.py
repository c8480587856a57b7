"""A text progress bar for management commands: redrawn in place on a terminal,
a line every 10% otherwise (so logs stay readable)."""

from __future__ import annotations

import time


class ProgressBar:
    WIDTH = 30

    def __init__(self, out, label: str) -> None:
        self.out = out
        self.label = label
        self.total = 0
        self.done = 0
        self._tty = hasattr(out, "isatty") and out.isatty()
        self._last_draw = 0.0
        self._last_decile = -1

    def start(self, total: int) -> None:
        self.total = total
        self._draw(force=True)

    def tick(self) -> None:
        self.done += 1
        self._draw()

    def finish(self) -> None:
        self._draw(force=True)
        if self._tty:
            self.out.write("\n")

    def _draw(self, force: bool = False) -> None:
        fraction = self.done / self.total if self.total else 1.0
        if self._tty:
            now = time.monotonic()
            if not force and now - self._last_draw < 0.1:
                return
            self._last_draw = now
            filled = int(fraction * self.WIDTH)
            bar = "#" * filled + "." * (self.WIDTH - filled)
            self.out.write(
                f"\r{self.label} [{bar}] {self.done}/{self.total}", ending=""
            )
            self.out.flush()
            return
        decile = int(fraction * 10)
        if force or decile > self._last_decile:
            self._last_decile = decile
            self.out.write(
                f"{self.label}: {self.done}/{self.total} ({int(fraction * 100)}%)"
            )
