"""WebSocket routes of every app, gathered for asgi.py."""

from __future__ import annotations

from newsroom.live.routing import websocket_urlpatterns as live_routes  # noqa: E402

websocket_urlpatterns: list = []
websocket_urlpatterns += live_routes
