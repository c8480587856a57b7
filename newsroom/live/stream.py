"""A stream: one live region of one open page.

It renders its region (a component and its args), watches exactly the cells that
render read (its ReadSet), and sends frames: only the parts that changed since the
last frame the client acknowledged, or the whole region when the structure
changed or the client missed a frame.

At most one frame is in flight. A frame rendered while one is in flight waits as
`pending`, and a newer render replaces it: a slow or stalled client costs one
sent frame and one pending page, never a growing queue. The client acks each
frame by its number; the next frame goes out on the ack (with a pacing
scheduler, at the next tick). Pure Python: no Django.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from newsroom.live.cells import ReadSet
from newsroom.live.render import Fragment, patch, render_page

FRAME_PREFIX = "<!--live "


class SentTotals:
    """Frames and bytes every stream of this process has sent, for /metrics.

    Per process on purpose: each web process reports its own (its heartbeat
    carries them), and a counter that only grows is what Prometheus expects.
    """

    __slots__ = ("frames", "full_frames", "bytes")

    def __init__(self) -> None:
        self.frames = 0
        self.full_frames = 0
        self.bytes = 0


SENT = SentTotals()


class Stream:
    def __init__(
        self,
        region: Callable[..., Any],
        args: tuple,
        send: Callable[[str], Awaitable[None]],
        scheduler: Any,
        *,
        reader_id: int | None = None,
        have: str = "",
        name: str = "",
        patches: bool = True,
    ) -> None:
        self.region = region
        self.args = args
        self.send_text = send
        self.scheduler = scheduler
        self.reader_id = reader_id
        self.name = name or getattr(region, "__name__", "region")
        # The digest of the HTML the page was served with: if the first render
        # matches it, the client already has this frame and none is sent.
        self.have = have
        self.patches = patches  # False: every frame is the whole region (baseline)
        self.readset: ReadSet | None = None
        self.client_page: Fragment | None = None  # what the client shows (acked)
        self.in_flight: tuple[int, Fragment] | None = None
        self.pending: Fragment | None = None
        self.page: Fragment | None = None  # the latest render
        self.seq = 0
        self.closed = False
        self.renders = 0
        self.frames = 0
        self.full_frames = 0
        self.bytes_sent = 0

    def __repr__(self) -> str:
        return f"<Stream {self.name} reader={self.reader_id} seq={self.seq}>"

    # -- watching ---------------------------------------------------------------

    def cells_changed(self) -> None:
        if not self.closed:
            self.scheduler.mark_dirty(self)

    def watch(self, readset: ReadSet) -> None:
        """Watch exactly what the last render read; drop what it no longer reads."""
        if readset is self.readset:
            return
        old, self.readset = self.readset, readset
        if old is not None:
            old.detach(self)
        readset.attach(self)

    def start(self) -> None:
        self.scheduler.mark_dirty(self)

    def release(self) -> None:
        """Socket closed: drop every watch at once and forget the pages."""
        self.closed = True
        if self.readset is not None:
            self.readset.detach(self)
            self.readset = None
        self.client_page = self.pending = self.page = None
        self.in_flight = None

    # -- rendering and frames -----------------------------------------------------

    def render(self) -> None:
        """Called by the tick with the component cache active."""
        page, readset = render_page(self.region, *self.args)
        self.renders += 1
        self.watch(readset)
        self.page = page
        if self.have:
            if page.digest == self.have:
                self.client_page = page
            self.have = ""
        self.pending = page

    async def flush(self) -> None:
        """Send the pending page unless a frame is in flight (with a pacing
        scheduler, only from a tick: an ack's frame waits for the next one)."""
        if self.closed or self.in_flight is not None or self.pending is None:
            return
        page = self.pending
        result = patch(self.client_page if self.patches else None, page)
        if not self.patches and page is self.client_page:
            result = None
        if result is None:
            self.pending = None
            self.client_page = page
            return
        hold = getattr(self.scheduler, "hold", None)
        if hold is not None and hold(self):
            return  # paced: the next tick sends it
        self.pending = None
        html, full = result
        self.seq += 1
        self.in_flight = (self.seq, page)
        text = f"{FRAME_PREFIX}{self.seq}{' full' if full else ''}-->{html}"
        self.frames += 1
        self.full_frames += full
        self.bytes_sent += len(text)
        SENT.frames += 1
        SENT.full_frames += full
        SENT.bytes += len(text) if text.isascii() else len(text.encode())
        await self.send_text(text)

    async def ack(self, seq: int, ok: bool = True) -> None:
        """The client applied frame `seq` (ok) or could not place part of it."""
        if self.in_flight is None or seq != self.in_flight[0]:
            return
        page = self.in_flight[1]
        self.in_flight = None
        if ok:
            self.client_page = page
        else:
            # The client missed (part of) a frame: its DOM is unknown, so the
            # next frame is the whole region.
            self.client_page = None
            if self.pending is None:
                self.pending = self.page
        await self.flush()

    async def receive(self, text: str) -> None:
        """A message from the client: {"ack": n, "ok": bool}. Anything else is
        ignored (a page cannot make the server do work)."""
        try:
            data = json.loads(text)
            seq = int(data["ack"])
            ok = bool(data.get("ok", True))
        except (ValueError, TypeError, KeyError):
            return
        await self.ack(seq, ok)
