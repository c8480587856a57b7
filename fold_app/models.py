from __future__ import annotations

from django.db import models

from fold_app.ulid import new_ulid
from newsroom.sources.models import Category, Source


class Delivery(models.Model):
    """One fetched payload, journaled. Never edited after it is written, except
    its status fields (status, parse_error, folded_at and the fold outcome)."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        PARSED = "parsed", "Parsed"
        FAILED = "failed", "Failed"
        DEFERRED = "deferred", "Deferred"

    class Kind(models.TextChoices):
        FEED = "feed", "Feed body"
        SCRAPE = "scrape", "Extracted links"
        BROWSER = "browser", "Rendered page links"

    id = models.CharField(
        primary_key=True, max_length=26, default=new_ulid, editable=False
    )
    source = models.ForeignKey(
        Source, on_delete=models.CASCADE, related_name="deliveries"
    )
    run = models.ForeignKey(
        "newsroom.Run",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="deliveries",
    )
    received_at = models.DateTimeField()
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.FEED)
    url = models.URLField(
        max_length=2000, blank=True, help_text="The URL the body came from."
    )
    body = models.BinaryField(null=True, blank=True)
    body_path = models.CharField(max_length=500, blank=True)
    body_pruned_at = models.DateTimeField(null=True, blank=True)
    content_type = models.CharField(max_length=200, blank=True)
    status = models.CharField(
        max_length=10, choices=Status.choices, default=Status.PENDING
    )
    parse_error = models.TextField(blank=True)
    folded_at = models.DateTimeField(null=True, blank=True)
    items_count = models.PositiveIntegerField(null=True, blank=True)
    new_items_count = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["received_at", "id"]
        verbose_name_plural = "deliveries"
        indexes = [
            models.Index(fields=["status", "received_at", "id"], name="delivery_queue"),
            models.Index(
                fields=["source", "received_at", "id"], name="delivery_by_source"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.id} ({self.status})"


class Item(models.Model):
    """A folded entry. Unique per (source, key); the more complete version wins."""

    # No index of its own: the unique (source, key) index starts with it.
    source = models.ForeignKey(
        Source, on_delete=models.CASCADE, related_name="items", db_index=False
    )
    key = models.CharField(
        max_length=64, help_text="Hash of GUID, else URL, else content."
    )
    guid = models.CharField(max_length=2000, blank=True)
    title = models.TextField(blank=True)
    url = models.URLField(max_length=2000, blank=True)
    author = models.CharField(max_length=500, blank=True)
    published = models.DateTimeField(null=True, blank=True)
    html = models.TextField(blank=True, help_text="Sanitized HTML.")
    text = models.TextField(blank=True, help_text="Plain text of the HTML.")
    category = models.ForeignKey(
        Category, null=True, blank=True, on_delete=models.SET_NULL, related_name="items"
    )
    completeness = models.PositiveIntegerField(default=0)
    delivery = models.ForeignKey(
        Delivery, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    first_seen_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        ordering = ["-published", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["source", "key"], name="item_unique_key_per_source"
            )
        ]
        # Every index costs each fold's inserts. Kept: first_seen_at (the day's
        # items for a briefing), and the foreign keys' own (category, delivery),
        # which deleting a category or a delivery needs to set theirs to NULL.
        indexes = [
            models.Index(fields=["first_seen_at"]),
        ]

    def __str__(self) -> str:
        return self.title or self.url or self.key
