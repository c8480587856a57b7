from __future__ import annotations

from django.conf import settings
from django.db import models
from django.urls import reverse


class Briefing(models.Model):
    """One written briefing of a reader's day.

    A day may be written more than once (after each run); the newest is the
    day's briefing, earlier ones stay in the archive. `sections` holds the
    written claims with item references; `items` a snapshot of every item
    referenced (title, url, source) so references resolve even after items are
    pruned; `events` the clustered events; `graph` the laid-out event graph.
    """

    class Engine(models.TextChoices):
        ANALYST = "analyst", "Built-in analyst"
        LLM = "llm", "Language model"

    reader = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="briefings"
    )
    day = models.DateField()
    run = models.ForeignKey(
        "newsroom.Run",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    engine = models.CharField(max_length=10, choices=Engine.choices)
    model = models.CharField(
        max_length=200, blank=True, help_text="The model that wrote it."
    )
    fallback_reason = models.TextField(
        blank=True,
        help_text="Why the model's text was replaced by the built-in analyst's.",
    )
    sections = models.JSONField(default=list)
    events = models.JSONField(default=list)
    graph = models.JSONField(default=dict)
    items = models.JSONField(default=dict)
    text = models.TextField(blank=True, help_text="The briefing as Markdown.")
    item_count = models.PositiveIntegerField(default=0)
    left_out = models.PositiveIntegerField(
        default=0,
        help_text="Stories already covered in recent briefings with nothing new.",
    )
    duration_ms = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-day", "-created_at", "-id"]
        indexes = [models.Index(fields=["reader", "-day", "-created_at"])]

    def __str__(self) -> str:
        return f"Briefing {self.day} ({self.reader})"

    def get_absolute_url(self) -> str:
        return reverse("briefing_detail", args=[self.pk])

    @property
    def event_count(self) -> int:
        return len(self.events)

    @property
    def word_count(self) -> int:
        return len(self.text.split())
