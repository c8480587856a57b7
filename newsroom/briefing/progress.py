"""Progress while a briefing is written, sent as briefing_progress, throttled.

Word counts change with every streamed token; the run status only needs a few
updates a second (the live tick renders at most five), so updates closer than
`interval` are coalesced and the latest is sent when the next one is due or
when the stage ends. Log lines (`message`) always go out.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from newsroom.briefing.signals import briefing_progress
from newsroom.briefing.text import word_count


class Progress:
    def __init__(
        self,
        run_id: int | None,
        engine: str,
        interval: float = 0.2,
        clock: Callable[[], float] = time.monotonic,
        echo: Callable[[dict, str | None], None] | None = None,
    ) -> None:
        self.run_id = run_id
        self.interval = interval
        self.clock = clock
        self.echo = echo
        self.state = {"stage": "starting", "words": 0, "heading": "", "engine": engine}
        self.sent = 0
        self._last_sent: float | None = None
        self._pending = False

    def stage(self, stage: str, message: str | None = None, **changes) -> None:
        """A new stage: always sent (stages change a handful of times per briefing)."""
        self.state.update(changes, stage=stage)
        self._send(message)

    def log(self, message: str) -> None:
        self._send(message)

    def wrote(self, heading: str, text: str) -> None:
        """Text was written under `heading`; sent when the throttle allows."""
        self.state["words"] += word_count(text)
        if heading:
            self.state["heading"] = heading
        now = self.clock()
        if self._last_sent is not None and now - self._last_sent < self.interval:
            self._pending = True
            return
        self._send(None)

    def flush(self) -> None:
        if self._pending:
            self._send(None)

    def _send(self, message: str | None) -> None:
        self._last_sent = self.clock()
        self._pending = False
        self.sent += 1
        progress = dict(self.state)
        if self.echo:
            self.echo(progress, message)
        briefing_progress.send(
            sender=Progress, run_id=self.run_id, progress=progress, message=message
        )
