from __future__ import annotations

from django.contrib import admin

from fold_app.models import Delivery, Item


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    list_display = ["id", "source", "kind", "status", "received_at", "folded_at", "items_count"]
    list_filter = ["status", "kind"]
    search_fields = ["id", "source__title", "source__url", "parse_error"]
    list_select_related = ["source"]
    date_hierarchy = "received_at"
    exclude = ["body"]


@admin.register(Item)
class ItemAdmin(admin.ModelAdmin):
    list_display = ["title", "source", "published", "category", "completeness", "updated_at"]
    list_filter = ["category", "source__reader"]
    search_fields = ["title", "url", "author", "source__title"]
    list_select_related = ["source", "category"]
    date_hierarchy = "published"
