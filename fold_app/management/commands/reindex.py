"""Rebuild all items from the delivery journal, in journal order."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from fold_app.progress import ProgressBar
from fold_app.reindex import reindex


class Command(BaseCommand):
    help = (
        "Rebuild every item from the journal (parsed deliveries in journal order). "
        "--check rebuilds into a scratch copy and fails if it differs from the live items."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--check",
            action="store_true",
            help="Compare only; exit non-zero when anything differs.",
        )

    def handle(self, *args, check: bool, **options):
        bar = ProgressBar(self.stdout, "Checking" if check else "Replaying")
        report = reindex(check=check, on_total=bar.start, tick=bar.tick)
        bar.finish()
        for source_id, label, pruned in report.unrebuildable:
            self.stdout.write(
                self.style.WARNING(
                    f"Could not rebuild source {source_id} ({label}): the bodies of {pruned} of its "
                    "deliveries were pruned. Its items were left as they are."
                )
            )
        for source_id, label in report.busy:
            self.stdout.write(
                self.style.WARNING(
                    f"Source {source_id} ({label}) kept receiving folds during the rebuild; "
                    "it was left as it was. Run reindex again."
                )
            )
        checked = f"{report.sources} sources, {report.deliveries} deliveries"
        if check:
            if report.differing:
                lines = "\n".join(
                    "  " + diff.summary() for diff in report.differing[:50]
                )
                more = len(report.differing) - 50
                raise CommandError(
                    f"The live items differ from a replay of the journal in {len(report.differing)} "
                    f"sources ({checked} checked):\n{lines}"
                    + (f"\n  ... and {more} more" if more > 0 else "")
                    + "\nRun `manage.py reindex` to rebuild them."
                )
            self.stdout.write(
                self.style.SUCCESS(f"The live items match the journal ({checked}).")
            )
            return
        self.stdout.write(
            self.style.SUCCESS(
                f"Rebuilt {checked}: {report.created} items created, {report.updated} updated, "
                f"{report.deleted} deleted ({len(report.differing)} sources had differed)."
            )
        )
