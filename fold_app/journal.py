"""Writing the delivery journal: the one way fetched payloads enter the system."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from fold_app import wake
from fold_app.models import Delivery


def record_delivery(
    *,
    source,
    body: bytes,
    content_type: str = "",
    kind: str = Delivery.Kind.FEED,
    url: str = "",
    run=None,
) -> Delivery:
    """Journal one payload as a pending delivery and wake the fold worker once it commits."""
    delivery = Delivery.objects.create(
        source=source,
        run=run,
        received_at=timezone.now(),
        kind=kind,
        url=url,
        body=body,
        content_type=content_type[:200],
    )
    transaction.on_commit(wake.notify)
    return delivery
