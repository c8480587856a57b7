"""Pruning old delivery bodies: the row and its outcome stay, the bytes go."""

from __future__ import annotations

from datetime import datetime

from django.db.models import Q
from django.utils import timezone

from fold_app.fold import QUEUED
from fold_app.models import Delivery

_BATCH = 500


def prune_bodies(older_than: datetime, now: datetime | None = None) -> int:
    """Drop the bodies of folded deliveries received before `older_than`.
    Queued deliveries keep theirs: they have not been folded yet. Returns the
    number pruned."""
    now = now or timezone.now()
    rows = Delivery.objects.filter(received_at__lt=older_than).exclude(
        status__in=QUEUED
    )
    rows = rows.filter(~Q(body=None))
    pruned = 0
    while True:
        # In batches: one UPDATE over years of bodies would hold the write lock.
        ids = list(rows.values_list("id", flat=True)[:_BATCH])
        if not ids:
            return pruned
        pruned += Delivery.objects.filter(pk__in=ids).update(
            body=None, body_pruned_at=now
        )
