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

    reader = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="runs"
    )
    state = models.CharField(max_length=12, choices=State.choices, default=State.QUEUED)
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
