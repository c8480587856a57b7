from __future__ import annotations

from django.contrib import admin

from newsroom.briefing.models import Briefing


@admin.register(Briefing)
class BriefingAdmin(admin.ModelAdmin):
    list_display = [
        "day",
        "reader",
        "engine",
        "model",
        "item_count",
        "left_out",
        "created_at",
    ]
    list_filter = ["engine", "reader"]
    search_fields = ["reader__username", "text", "model"]
    date_hierarchy = "day"
    readonly_fields = ["created_at", "duration_ms", "run"]
    list_select_related = ["reader"]
