from __future__ import annotations

from django.urls import path

from newsroom.live.consumers import LiveConsumer

websocket_urlpatterns = [
    path("ws/live/sidebar/", LiveConsumer.as_asgi(region="sidebar")),
    path("ws/live/article/", LiveConsumer.as_asgi(region="article")),
    path("ws/live/run/<int:run_id>/", LiveConsumer.as_asgi(region="run")),
]
