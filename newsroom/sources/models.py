from __future__ import annotations

from django.conf import settings
from django.db import models
from django.urls import reverse


class Category(models.Model):
    """A reader's group of sources; the briefing writes one section per category."""

    reader = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="categories"
    )
    name = models.CharField(max_length=100)
    description = models.TextField(
        blank=True, help_text="What belongs here; helps the briefing place items."
    )
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["position", "name"]
        verbose_name_plural = "categories"
        constraints = [
            models.UniqueConstraint(fields=["reader", "name"], name="category_unique_per_reader")
        ]

    def __str__(self) -> str:
        return self.name


class Source(models.Model):
    class Kind(models.TextChoices):
        FEED = "feed", "Feed"
        SCRAPE = "scrape", "Scraped page"
        BROWSER = "browser", "Browser-rendered page"

    reader = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sources"
    )
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.FEED)
    url = models.URLField(max_length=2000)
    title = models.CharField(max_length=300, blank=True)
    site_url = models.URLField(max_length=2000, blank=True)
    category = models.ForeignKey(
        Category, null=True, blank=True, on_delete=models.SET_NULL, related_name="sources"
    )
    link_pattern = models.CharField(
        max_length=500,
        blank=True,
        help_text="Scraped pages: a regular expression; links whose URL matches become items.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    # Health, written after every fetch.
    last_status = models.CharField(max_length=20, blank=True)
    last_error = models.TextField(blank=True)
    error_count = models.PositiveIntegerField(default=0)
    last_fetched_at = models.DateTimeField(null=True, blank=True)
    last_success_at = models.DateTimeField(null=True, blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    etag = models.CharField(max_length=500, blank=True)
    last_modified = models.CharField(max_length=100, blank=True)
    # Set when the server answered Retry-After: no run fetches it before then.
    retry_after = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["title", "url"]
        constraints = [
            models.UniqueConstraint(fields=["reader", "url"], name="source_unique_url_per_reader")
        ]
        indexes = [models.Index(fields=["reader", "category"])]

    def __str__(self) -> str:
        return self.title or self.url

    def get_absolute_url(self) -> str:
        return reverse("source_edit", args=[self.pk])

    @property
    def display_title(self) -> str:
        return self.title or self.url

    # The health fields that say "try again later"; cleared together.
    RETRY_RESET = {"error_count": 0, "last_error": "", "next_attempt_at": None, "retry_after": None}

    def reset_health(self) -> None:
        """Forget errors, backoff and validators: the source is fetched at the next run."""
        for field, value in self.RETRY_RESET.items():
            setattr(self, field, value)
        self.etag = self.last_modified = ""

    @property
    def is_failing(self) -> bool:
        return self.error_count > 0
