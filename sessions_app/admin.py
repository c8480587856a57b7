from __future__ import annotations

from django.contrib import admin

from sessions_app.models import BrowserHost, BrowserSession, ReaderSecret


@admin.register(BrowserSession)
class BrowserSessionAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "owner",
        "state",
        "reason",
        "url",
        "opened_at",
        "last_used_at",
    )
    list_filter = ("state",)
    search_fields = ("id", "url", "owner__username", "reason")
    readonly_fields = [f.name for f in BrowserSession._meta.fields]


@admin.register(BrowserHost)
class BrowserHostAdmin(admin.ModelAdmin):
    list_display = (
        "tag",
        "endpoint",
        "pid",
        "hostname",
        "started_at",
        "baseline_mb",
        "tab_mb",
    )


@admin.register(ReaderSecret)
class ReaderSecretAdmin(admin.ModelAdmin):
    # The sealed value is never listed or shown.
    list_display = ("owner", "name", "updated_at")
    fields = ("owner", "name", "updated_at")
    readonly_fields = ("owner", "name", "updated_at")
