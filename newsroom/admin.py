from __future__ import annotations

from django.contrib import admin
from django.db import models
from django.db.models import Count

from newsroom.runs.models import Run
from newsroom.sources.models import Category, Source


class SourceInline(admin.TabularInline):
    model = Source
    fields = ["title", "url", "kind", "last_status", "error_count"]
    readonly_fields = ["last_status", "error_count"]
    extra = 0
    show_change_link = True
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}


@admin.register(Category)
class CategoryAdmin(admin.ModelAdmin):
    list_display = ["name", "reader", "position", "source_count", "description"]
    list_filter = ["reader"]
    list_editable = ["position"]
    search_fields = ["name", "description", "reader__username"]
    list_select_related = ["reader"]
    autocomplete_fields = ["reader"]
    inlines = [SourceInline]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(n_sources=Count("sources"))

    @admin.display(description="sources", ordering="n_sources")
    def source_count(self, obj: Category) -> int:
        return obj.n_sources


class HealthFilter(admin.SimpleListFilter):
    title = "health"
    parameter_name = "health"

    def lookups(self, request, model_admin):
        return [
            ("failing", "Failing"),
            ("ok", "Fetched fine"),
            ("never", "Never fetched"),
        ]

    def queryset(self, request, queryset):
        if self.value() == "failing":
            return queryset.filter(error_count__gt=0)
        if self.value() == "ok":
            return queryset.filter(error_count=0, last_success_at__isnull=False)
        if self.value() == "never":
            return queryset.filter(
                last_fetched_at__isnull=True, last_success_at__isnull=True
            )
        return queryset


@admin.register(Source)
class SourceAdmin(admin.ModelAdmin):
    list_display = [
        "display_title",
        "url",
        "reader",
        "kind",
        "category",
        "health",
        "error_count",
        "last_success_at",
        "next_attempt_at",
    ]
    list_display_links = ["display_title", "url"]
    list_filter = [HealthFilter, "kind", "last_status", "reader", "category"]
    search_fields = ["title", "url", "site_url", "reader__username", "last_error"]
    list_select_related = ["reader", "category"]
    autocomplete_fields = ["reader", "category"]
    date_hierarchy = "created_at"
    readonly_fields = ["created_at", "last_fetched_at", "last_success_at"]
    actions = ["clear_errors"]
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "reader",
                    "title",
                    "url",
                    "site_url",
                    "kind",
                    "category",
                    "link_pattern",
                ]
            },
        ),
        (
            "Health",
            {
                "fields": [
                    "last_status",
                    "last_error",
                    "error_count",
                    "last_fetched_at",
                    "last_success_at",
                    "next_attempt_at",
                    "etag",
                    "last_modified",
                    "created_at",
                ]
            },
        ),
    ]

    @admin.display(description="title", ordering="title")
    def display_title(self, obj: Source) -> str:
        return obj.display_title

    @admin.display(description="health", ordering="error_count")
    def health(self, obj: Source) -> str:
        if obj.is_failing:
            return f"FAILING: {obj.last_error[:80]}"
        return obj.last_status or "never fetched"

    @admin.action(description="Clear errors and fetch at the next run")
    def clear_errors(self, request, queryset):
        changed = queryset.update(**Source.RETRY_RESET)
        self.message_user(request, f"Cleared the errors of {changed} sources.")


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["id", "reader", "state", "created_at", "started_at", "finished_at", "saved_at"]
    list_filter = ["state", "reader"]
    search_fields = ["reader__username"]
    date_hierarchy = "created_at"
    readonly_fields = ["created_at", "saved_at"]

import newsroom.briefing.admin  # noqa: E402,F401  (registers Briefing)
