from __future__ import annotations

from django.conf import settings
from django.db import models
from django.urls import reverse


class Run(models.Model):
    """One collection of all of a reader's sources.

    `status` holds the per-source states, counts and the event log. While the run
    works it lives in memory and is saved at most once a second (see runs issue).
    """

    class State(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        INTERRUPTED = "interrupted", "Interrupted"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    class Trigger(models.TextChoices):
        MANUAL = "manual", "Run now"
        DAILY = "daily", "Daily schedule"
        RETRY = "retry", "Retry of failing sources"
        TERMINAL = "terminal", "Terminal (run_sources)"

    ACTIVE_STATES = (State.QUEUED, State.RUNNING)

    reader = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="runs"
    )
    state = models.CharField(max_length=12, choices=State.choices, default=State.QUEUED)
    trigger = models.CharField(
        max_length=10, choices=Trigger.choices, default=Trigger.MANUAL
    )
    # The process executing the run ("host:pid:token"); saved_at is its heartbeat.
    worker = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    status = models.JSONField(default=dict, blank=True)
    saved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["reader", "-created_at"]), models.Index(fields=["state"])]

    def __str__(self) -> str:
        return f"Run {self.pk} ({self.get_state_display()})"

    def get_absolute_url(self) -> str:
        return reverse("run_detail", args=[self.pk])

    @property
    def is_active(self) -> bool:
        return self.state in self.ACTIVE_STATES


class RunSchedule(models.Model):
    """When a reader's daily run starts (server time zone); empty means no daily run."""

    reader = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="run_schedule"
    )
    run_at = models.TimeField(null=True, blank=True)
    # The day the daily run was last queued: claimed with a conditional update so
    # two processes never queue the same day twice.
    last_run_on = models.DateField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.reader} daily at {self.run_at or 'never'}"
