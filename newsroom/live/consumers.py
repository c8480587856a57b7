"""One WebSocket consumer per live region of an open page.

Authenticated from the session (AuthMiddlewareStack) and origin-checked
(AllowedHostsOriginValidator), both in asgi.py. A socket without a logged-in
reader is closed with 4401, a run that is not the reader's with 4404. The
consumer has no channel-layer channel of its own: the process's hub listens once
for all of its streams.
"""

from __future__ import annotations

from urllib.parse import parse_qs

from channels.generic.websocket import AsyncWebsocketConsumer

from newsroom.live.hub import CLOSE_LOGGED_OUT, CLOSE_NOT_FOUND, NotFound, get_hub
from newsroom.live.stream import Stream


class LiveConsumer(AsyncWebsocketConsumer):
    # Not a configured alias: Channels then gives this consumer no channel.
    channel_layer_alias = "live-hub-only"
    region = ""

    stream: Stream | None = None

    def __init__(self, *args, region: str = "", **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.region = region or self.region

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.accept()
            await self.close(code=CLOSE_LOGGED_OUT)
            return
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        have = query.get("have", [""])[0][:64]
        run_id = self.scope["url_route"]["kwargs"].get("run_id")
        try:
            self.stream = await get_hub().open(
                self.region,
                user.pk,
                send=self._send_frame,
                close=self._close_with,
                run_id=run_id,
                have=have,
            )
        except NotFound:
            await self.accept()
            await self.close(code=CLOSE_NOT_FOUND)
            return
        await self.accept()
        self.stream.start()

    async def _send_frame(self, text: str) -> None:
        await self.send(text_data=text)

    async def _close_with(self, code: int) -> None:
        self.stream = None
        await self.close(code=code)

    async def receive(
        self, text_data: str | None = None, bytes_data: bytes | None = None
    ) -> None:
        if self.stream is not None and text_data:
            await self.stream.receive(text_data[:200])

    async def disconnect(self, code: int) -> None:
        if self.stream is not None:
            get_hub().release(self.stream)
            self.stream = None

    async def dispatch(self, message: dict) -> None:
        # Acks never touch the database: skip Channels' per-message
        # close_old_connections thread hop for them.
        if message["type"] == "websocket.receive":
            await self.websocket_receive(message)
            return
        await super().dispatch(message)
