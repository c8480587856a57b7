"""Drop delivery bodies older than the retention age; rows and outcomes stay."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from fold_app.retention import prune_bodies


class Command(BaseCommand):
    help = (
        "Prune the bodies of folded deliveries older than N days (default "
        "NEWSROOM_DELIVERY_RETENTION_DAYS). Sources with pruned bodies can no longer be reindexed."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--days", type=int, default=None, help="Age in days (at least 1)."
        )

    def handle(self, *args, days: int | None, **options):
        days = settings.NEWSROOM_DELIVERY_RETENTION_DAYS if days is None else days
        if days < 1:
            raise CommandError("--days must be at least 1")
        cutoff = timezone.now() - timedelta(days=days)
        self.stdout.write(
            f"Pruning bodies of folded deliveries received before {cutoff:%Y-%m-%d %H:%M} UTC..."
        )
        pruned = prune_bodies(cutoff)
        self.stdout.write(
            self.style.SUCCESS(
                f"Pruned {pruned} delivery bodies; their rows and outcomes remain."
            )
        )
