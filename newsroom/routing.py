"""WebSocket routes of every app, gathered for asgi.py."""

from __future__ import annotations

websocket_urlpatterns: list = []
