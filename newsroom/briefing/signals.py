"""Signals the briefing sends; runs and live listen, so briefing imports neither."""

from __future__ import annotations

from django.dispatch import Signal

# While writing: kwargs run_id (int | None), progress (dict with stage, words,
# heading, engine), message (str | None: a log line, or None for progress only).
briefing_progress = Signal()

# After a briefing is stored: kwargs briefing, reader.
briefing_stored = Signal()
