"""The core app's models live in their feature packages; Django finds them here."""

from newsroom.runs.models import Run, RunSchedule
from newsroom.sources.models import Category, Source

__all__ = ["Category", "Run", "RunSchedule", "Source"]
