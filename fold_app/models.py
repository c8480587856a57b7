from __future__ import annotations

from django.db import models, router, transaction

from fold_app.ulid import new_ulid
from newsroom.sources.models import Category, Source

_UNSET = object()


class DeliveryQuerySet(models.QuerySet):
    def bulk_create(self, objs, *args, **kwargs):
        """Also writes the bodies given as `Delivery(body=...)`, in the same
        transaction."""
        objs = list(objs)
        bodies = []
        for delivery in objs:
            body = delivery.__dict__.get("_unsaved_body", _UNSET)
            if body is not _UNSET and body is not None:
                bodies.append(DeliveryBody(delivery=delivery, body=body))
        with transaction.atomic(using=self.db, savepoint=False):
            created = super().bulk_create(objs, *args, **kwargs)
            DeliveryBody.objects.using(self.db).bulk_create(
                bodies, batch_size=kwargs.get("batch_size")
            )
        for delivery in objs:
            delivery.__dict__.pop("_unsaved_body", None)
        return created


class Delivery(models.Model):
    """One fetched payload, journaled. Never edited after it is written, except
    its status fields (status, parse_error, folded_at and the fold outcome).

    The payload itself lives in DeliveryBody, a row of its own: every fold
    rewrites this row's status fields, and a row that carried some kilobytes of
    body would be rewritten with them. `Delivery(body=...)` (and
    `Delivery.objects.create(body=...)`, `bulk_create`) still writes both;
    `delivery.body` reads it (None when pruned), from the row loaded with
    `select_related("payload")` or else by one query."""

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

    objects = DeliveryQuerySet.as_manager()

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

    @property
    def body(self) -> bytes | None:
        """The payload's bytes; None once pruned (or never given)."""
        body = self.__dict__.get("_unsaved_body", _UNSET)
        if body is not _UNSET:
            return body
        try:
            return self.payload.body
        except DeliveryBody.DoesNotExist:
            return None

    @body.setter
    def body(self, value: bytes | None) -> None:
        # Written by the next save() (an insert: the journal is never edited).
        if not self._state.adding:
            raise ValueError(
                "a journaled delivery's body is never edited; prune it instead"
            )
        self.__dict__["_unsaved_body"] = None if value is None else bytes(value)

    def save(self, *args, **kwargs) -> None:
        body = self.__dict__.get("_unsaved_body", _UNSET)
        if body is _UNSET:
            return super().save(*args, **kwargs)
        using = kwargs.get("using") or router.db_for_write(type(self), instance=self)
        with transaction.atomic(using=using, savepoint=False):
            super().save(*args, **kwargs)
            if body is not None:
                payload = DeliveryBody(delivery=self, body=body)
                payload.save(using=using, force_insert=True)
        del self.__dict__["_unsaved_body"]
        if body is not None:
            Delivery.payload.related.set_cached_value(self, payload)


class DeliveryBody(models.Model):
    """A delivery's payload as fetched (or the extracted links of a scrape).
    Deleted when pruned; the delivery row keeps its outcome."""

    delivery = models.OneToOneField(
        Delivery, primary_key=True, on_delete=models.CASCADE, related_name="payload"
    )
    body = models.BinaryField()

    def __str__(self) -> str:
        return f"body of {self.delivery_id} ({len(self.body)} bytes)"


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
