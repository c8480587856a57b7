from __future__ import annotations

from django.contrib import admin, messages

from fold_app import wake
from fold_app.models import Delivery, Item


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "source",
        "kind",
        "status",
        "received_at",
        "folded_at",
        "items_count",
        "new_items_count",
    ]
    list_filter = ["status", "kind"]
    search_fields = ["id", "source__title", "source__url", "parse_error"]
    list_select_related = ["source"]
    date_hierarchy = "received_at"
    actions = ["requeue_failed"]
    # The journal is never edited by hand: only the fold writes its outcome.
    readonly_fields = [
        "id",
        "source",
        "run",
        "received_at",
        "kind",
        "url",
        "body_path",
        "body_pruned_at",
        "content_type",
        "status",
        "parse_error",
        "folded_at",
        "items_count",
        "new_items_count",
    ]

    def has_add_permission(self, request):
        return False

    @admin.action(description="Re-queue failed deliveries (fold them again)")
    def requeue_failed(self, request, queryset):
        # Only failed rows that still have their body: a pruned one would only fail again.
        requeued = queryset.filter(
            status=Delivery.Status.FAILED, payload__isnull=False
        ).update(
            status=Delivery.Status.PENDING,
            parse_error="",
            folded_at=None,
            items_count=None,
            new_items_count=None,
        )
        skipped = queryset.count() - requeued
        wake.notify()
        self.message_user(
            request, f"Re-queued {requeued} failed deliveries.", messages.SUCCESS
        )
        if skipped:
            self.message_user(
                request,
                f"{skipped} selected deliveries were not failed or have no body; left as they are.",
                messages.WARNING,
            )


@admin.register(Item)
class ItemAdmin(admin.ModelAdmin):
    list_display = [
        "title",
        "source",
        "published",
        "category",
        "completeness",
        "updated_at",
    ]
    list_filter = ["category", "source__reader"]
    search_fields = ["title", "url", "author", "source__title"]
    list_select_related = ["source", "category"]
    date_hierarchy = "published"
    readonly_fields = ["delivery", "key", "first_seen_at", "updated_at", "completeness"]
