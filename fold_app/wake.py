"""The fold worker's wake signal: capacity one, lossy, coalescing.

It carries only "there is work". Losing one is harmless: the delivery stays
pending and the next signal, the tick or a restart picks it up. In one process
(`serve`) a notify sets the local flag; across processes the fold issue sends it
over the channel layer too.
"""

from __future__ import annotations

import threading


class WakeSignal:
    def __init__(self) -> None:
        self._event = threading.Event()

    def notify(self) -> None:
        # Setting a set event is a no-op: any number of notifies coalesce into one.
        self._event.set()

    def wait(self, timeout: float | None) -> bool:
        """Wait for a signal; True if one came (and consume it), False on timeout."""
        fired = self._event.wait(timeout)
        self._event.clear()
        return fired

    def pending(self) -> bool:
        return self._event.is_set()


signal = WakeSignal()


def notify() -> None:
    signal.notify()
