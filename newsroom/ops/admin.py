from __future__ import annotations

from django.contrib import admin
from django.templatetags.static import static
from django.utils import timezone
from django.utils.html import format_html

from newsroom.ops import heartbeat
from newsroom.ops.models import Heartbeat


@admin.register(Heartbeat)
class HeartbeatAdmin(admin.ModelAdmin):
    """When each role last beat; stale rows stay until an operator deletes them."""

    list_display = [
        "role",
        "process",
        "beat_state",
        "last_beat",
        "started_at",
        "detail",
    ]
    list_filter = ["role"]
    search_fields = ["role", "process"]
    readonly_fields = [
        "role",
        "process",
        "started_at",
        "last_beat_at",
        "stopped_at",
        "detail",
    ]

    def has_add_permission(self, request) -> bool:
        return False  # rows are written by the processes themselves

    @admin.display(description="state")
    def beat_state(self, obj: Heartbeat) -> str:
        state = obj.state(heartbeat.stale_after())
        if state == Heartbeat.State.STALE:
            # The admin's own red cross: the CSP allows no inline styles.
            return format_html(
                '<img src="{}" alt=""> <strong>STALE</strong>',
                static("admin/img/icon-no.svg"),
            )
        return state

    @admin.display(description="last beat", ordering="last_beat_at")
    def last_beat(self, obj: Heartbeat) -> str:
        seconds = (timezone.now() - obj.last_beat_at).total_seconds()
        return f"{seconds:.0f} s ago ({obj.last_beat_at:%Y-%m-%d %H:%M:%S})"
