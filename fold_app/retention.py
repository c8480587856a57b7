"""Pruning old delivery bodies: the row and its outcome stay, the bytes go
(their DeliveryBody row is deleted)."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from fold_app.fold import QUEUED
from fold_app.models import Delivery, DeliveryBody

_BATCH = 500


def prune_bodies(older_than: datetime, now: datetime | None = None) -> int:
    """Drop the bodies of folded deliveries received before `older_than`.
    Queued deliveries keep theirs: they have not been folded yet. Returns the
    number pruned."""
    now = now or timezone.now()
    rows = Delivery.objects.filter(received_at__lt=older_than).exclude(
        status__in=QUEUED
    )
    rows = rows.filter(payload__isnull=False)
    pruned = 0
    while True:
        # In batches: one DELETE over years of bodies would hold the write lock.
        ids = list(rows.values_list("id", flat=True)[:_BATCH])
        if not ids:
            return pruned
        with transaction.atomic():
            # Still folded (locked till commit): the admin may have re-queued one.
            ids = list(
                Delivery.objects.select_for_update()
                .filter(pk__in=ids)
                .exclude(status__in=QUEUED)
                .values_list("id", flat=True)
            )
            gone, _ = DeliveryBody.objects.filter(pk__in=ids).delete()
            Delivery.objects.filter(pk__in=ids).update(body_pruned_at=now)
        pruned += gone
