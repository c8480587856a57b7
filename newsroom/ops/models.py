from __future__ import annotations

from datetime import datetime, timedelta

from django.db import models
from django.utils import timezone


class Heartbeat(models.Model):
    """One long-running role in one process: when it started and last beat.

    Rows are upserted by the process itself (see heartbeat.py). A process that
    stops cleanly marks its rows stopped; one that dies leaves them to go stale.
    Neither is deleted on its own: an operator removes old rows in the admin.
    """

    class State(models.TextChoices):
        FRESH = "fresh", "Fresh"
        STALE = "stale", "Stale"
        STOPPED = "stopped", "Stopped"

    role = models.CharField(max_length=40)
    process = models.CharField(max_length=200, help_text="host:pid")
    started_at = models.DateTimeField()
    last_beat_at = models.DateTimeField()
    stopped_at = models.DateTimeField(null=True, blank=True)
    detail = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["role", "-last_beat_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["role", "process"], name="heartbeat_one_row_per_role_process"
            )
        ]

    def __str__(self) -> str:
        return f"{self.role} @ {self.process}"

    def age(self, now: datetime | None = None) -> timedelta:
        return (now or timezone.now()) - self.last_beat_at

    def state(self, stale_after: timedelta, now: datetime | None = None) -> str:
        return beat_state(self.last_beat_at, self.stopped_at, stale_after, now)


def beat_state(
    last_beat_at: datetime,
    stopped_at: datetime | None,
    stale_after: timedelta,
    now: datetime | None = None,
) -> str:
    """ "stopped" once the process said so, "stale" past `stale_after`, else "fresh"."""
    if stopped_at is not None and stopped_at >= last_beat_at:
        return Heartbeat.State.STOPPED
    if (now or timezone.now()) - last_beat_at > stale_after:
        return Heartbeat.State.STALE
    return Heartbeat.State.FRESH
