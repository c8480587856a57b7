from __future__ import annotations

from django.contrib import admin

from newsroom.runs.models import Run
from newsroom.sources.models import Category, Source


@admin.register(Category)
class CategoryAdmin(admin.ModelAdmin):
    list_display = ["name", "reader", "position"]
    list_filter = ["reader"]
    search_fields = ["name", "description", "reader__username"]


@admin.register(Source)
class SourceAdmin(admin.ModelAdmin):
    list_display = [
        "__str__",
        "reader",
        "kind",
        "category",
        "last_status",
        "error_count",
        "last_success_at",
        "next_attempt_at",
    ]
    list_filter = ["kind", "last_status", "reader", "category"]
    search_fields = ["title", "url", "reader__username", "last_error"]
    list_select_related = ["reader", "category"]
    readonly_fields = ["created_at", "last_fetched_at", "last_success_at"]


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["id", "reader", "state", "created_at", "started_at", "finished_at", "saved_at"]
    list_filter = ["state", "reader"]
    search_fields = ["reader__username"]
    date_hierarchy = "created_at"
    readonly_fields = ["created_at", "saved_at"]

import newsroom.briefing.admin  # noqa: E402,F401  (registers Briefing)
