"""Write one reader's sources as OPML: `export_opml --reader NAME [-o FILE]`."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from newsroom.management.commands.import_opml import _reader
from newsroom.sources.models import Category, Source
from newsroom.sources.opml_io import export_opml


class Command(BaseCommand):
    help = "Export a reader's sources and categories as OPML (to stdout, or a file)."

    def add_arguments(self, parser):
        parser.add_argument("--reader", required=True, help="user name of the reader")
        parser.add_argument(
            "-o", "--output", help="file to write; default standard output"
        )

    def handle(self, *args, reader: str, output: str | None, **options):
        user = _reader(reader)
        sources = Source.objects.filter(reader=user).count()
        categories = Category.objects.filter(reader=user).count()
        body = export_opml(user)
        summary = f"Exported {sources} sources in {categories} categories for {user.get_username()}"
        if output:
            try:
                Path(output).write_bytes(body)
            except OSError as e:
                raise CommandError(
                    f"Cannot write {output}: {e.strerror or e}"
                ) from None
            self.stdout.write(self.style.SUCCESS(f"{summary} to {output}."))
        else:
            # The OPML goes to stdout; progress to stderr so a redirect gets a clean file.
            self.stderr.write(f"{summary}.")
            self.stdout.write(body.decode("utf-8"), ending="")
