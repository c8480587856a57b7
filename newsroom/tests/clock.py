"""A clock tests move by hand, for code that takes its clock as an argument."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


class HandClock:
    """Returns `now` until the test moves it: a datetime (wall clocks) or a
    number of seconds (monotonic clocks), whichever it starts with."""

    def __init__(self, start: datetime | float | None = None) -> None:
        self.now = datetime.now(UTC) if start is None else start

    def __call__(self):
        return self.now

    def advance(self, seconds: float) -> None:
        if isinstance(self.now, datetime):
            self.now += timedelta(seconds=seconds)
        else:
            self.now += seconds
