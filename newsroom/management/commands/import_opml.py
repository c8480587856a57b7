"""Import an OPML file into one reader's sources: `import_opml FILE --reader NAME`."""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from newsroom.sources.opml import MAX_BYTES, OpmlError
from newsroom.sources.opml_io import STARTER_OPML, import_opml


class Command(BaseCommand):
    help = "Import the feeds of an OPML file for a reader (all or nothing)."

    def add_arguments(self, parser):
        parser.add_argument(
            "file", help="OPML file to import, or 'starter' for the shipped list"
        )
        parser.add_argument("--reader", required=True, help="user name of the reader")

    def handle(self, *args, file: str, reader: str, **options):
        user = _reader(reader)
        path = STARTER_OPML if file == "starter" else Path(file)
        try:
            size = path.stat().st_size
        except OSError as e:
            raise CommandError(f"Cannot read {path}: {e.strerror or e}") from None
        if size > MAX_BYTES:
            raise CommandError(
                f"{path} is {size / 1024 / 1024:.1f} MB; OPML files up to "
                f"{MAX_BYTES // 1024 // 1024} MB can be imported. Nothing was imported."
            )
        self.stdout.write(
            f"Reading {path} ({size:,} bytes) for {user.get_username()}..."
        )
        try:
            result = import_opml(user, path.read_bytes(), progress=self.stdout.write)
        except OpmlError as e:
            raise CommandError(f"{path}: {e} Nothing was imported.") from None
        self.stdout.write(self.style.SUCCESS(result.summary()))


def _reader(name: str):
    try:
        return get_user_model().objects.get_by_natural_key(name)
    except get_user_model().DoesNotExist:
        raise CommandError(f"There is no reader named {name!r}.") from None
