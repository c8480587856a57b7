"""A fold's time budget, checked at safe points. Pure: imports no Django."""

from __future__ import annotations

import time
from collections.abc import Callable


class FoldTimeout(Exception):
    """The fold ran past its deadline; whatever it wrote is rolled back."""


class Deadline:
    def __init__(
        self, seconds: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.seconds = seconds
        self._clock = clock
        self.expires_at = clock() + seconds
        self.abandoned = False  # set by the waiter that gave up on this fold

    def remaining(self) -> float:
        return self.expires_at - self._clock()

    def check(self) -> None:
        if self.abandoned or self.remaining() <= 0:
            raise FoldTimeout(
                f"Folding took longer than {describe_seconds(self.seconds)}."
            )


def describe_seconds(seconds: float) -> str:
    if seconds >= 60 and seconds % 60 == 0:
        minutes = int(seconds // 60)
        return f"{minutes} minute{'s' if minutes != 1 else ''}"
    return f"{seconds:g} s"
