"""Kept browser pages, the shared browser they live in, and readers' secrets.

Everything another process needs (which browser is running and where, which
session owns which page) is here in the database: a page kept by one web process
is driven by whichever process serves the next request.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class BrowserHost(models.Model):
    """The one shared Chromium (a single row, pk=1).

    `tag` changes with every launch: session ids carry it, so an id issued before
    the browser (or the server) restarted is told apart from one never issued.
    """

    tag = models.CharField(max_length=32, blank=True)
    endpoint = models.CharField(max_length=200, blank=True)  # http://127.0.0.1:PORT
    ws_url = models.CharField(max_length=300, blank=True)  # unique per browser instance
    pid = models.IntegerField(null=True, blank=True)
    hostname = models.CharField(max_length=255, blank=True)
    executable = models.CharField(max_length=500, blank=True)
    user_data_dir = models.CharField(max_length=500, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    baseline_mb = models.FloatField(default=0.0)  # the browser with no kept page
    tab_mb = models.FloatField(null=True, blank=True)  # last measured per kept page
    # The egress proxy Chromium reaches the network through (sessions_app.egress):
    # launched with it, and the browser counts as alive only while it answers.
    egress_port = models.IntegerField(null=True, blank=True)
    egress_pid = models.IntegerField(null=True, blank=True)
    egress_token = models.CharField(max_length=64, blank=True)
    egress_private = models.BooleanField(
        default=False, help_text="The proxy passes private addresses."
    )

    def __str__(self) -> str:
        return f"browser {self.tag or '(none)'} at {self.endpoint or '-'}"


class BrowserSession(models.Model):
    class State(models.TextChoices):
        NOT_OPENED = "not_opened", "not opened"
        OPEN = "open", "open"
        GONE = "gone", "gone"

    # "<tag>-<random>": the tag of the browser generation that issued it.
    id = models.CharField(primary_key=True, max_length=64)
    tag = models.CharField(max_length=32, db_index=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="browser_sessions",
    )
    url = models.URLField(max_length=2000)
    options = models.JSONField(default=dict, blank=True)
    state = models.CharField(
        max_length=12, choices=State.choices, default=State.NOT_OPENED
    )
    reason = models.TextField(blank=True, help_text="Why the session closed.")
    created_at = models.DateTimeField()
    opened_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    # Set while an action runs on the page: the reaper leaves a busy page alone.
    busy_since = models.DateTimeField(null=True, blank=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    current_url = models.URLField(max_length=2000, blank=True)
    title = models.CharField(max_length=500, blank=True)
    # Where the page lives in the browser (CDP ids).
    context_id = models.CharField(max_length=64, blank=True)
    target_id = models.CharField(max_length=64, blank=True)
    # Estimated size of the record, for the bytes bound on records without a page.
    size_bytes = models.PositiveIntegerField(default=0)
    # Eviction order (nanoseconds): set when inserted and again when closed.
    queued_ns = models.BigIntegerField(default=0, db_index=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["owner", "state"])]

    def __str__(self) -> str:
        return f"{self.id} ({self.get_state_display()})"


class SessionReservation(models.Model):
    """A slot taken by a page being opened: opening takes seconds, and opens
    arriving meanwhile must not all believe there is room."""

    tag = models.CharField(max_length=32)
    created_at = models.DateTimeField()


class ReaderSecret(models.Model):
    """A value typed into pages as `{{secret:NAME}}`; stored encrypted, never shown."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="browser_secrets",
    )
    name = models.SlugField(max_length=64)
    sealed = models.TextField()  # Fernet token of the value
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "name"], name="secret_unique_per_reader"
            )
        ]

    def __str__(self) -> str:
        return self.name
