"""python manage.py brief --reader NAME [--day YYYY-MM-DD]: write one briefing."""

from __future__ import annotations

from datetime import date

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from newsroom.briefing.service import write_briefing


class Command(BaseCommand):
    help = "Write a reader's briefing for a day (today by default), printing progress."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--reader", required=True, help="The reader's username.")
        parser.add_argument("--day", help="YYYY-MM-DD; today in TIME_ZONE by default.")

    def handle(self, *args, reader: str, day: str | None, **options) -> None:
        try:
            user = get_user_model().objects.get(username=reader)
        except get_user_model().DoesNotExist:
            raise CommandError(f"No reader named {reader!r}") from None
        try:
            wanted = date.fromisoformat(day) if day else timezone.localdate()
        except ValueError:
            raise CommandError(f"--day {day!r} is not a date: use YYYY-MM-DD") from None

        last_words = -1

        def echo(progress: dict, message: str | None) -> None:
            nonlocal last_words
            if message:
                self.stdout.write(f"[{progress['stage']}] {message}")
            elif progress["words"] != last_words:
                heading = f" · {progress['heading']}" if progress["heading"] else ""
                self.stdout.write(f"  {progress['words']} words{heading}")
            last_words = progress["words"]

        briefing = write_briefing(user, wanted, echo=echo)
        if briefing.fallback_reason:
            self.stdout.write(self.style.WARNING(briefing.fallback_reason))
        self.stdout.write(
            self.style.SUCCESS(
                f"Briefing {briefing.pk} for {wanted}: {len(briefing.events)} events, "
                f"{briefing.item_count} items, {briefing.word_count} words, "
                f"{briefing.duration_ms} ms ({briefing.model})"
            )
        )
