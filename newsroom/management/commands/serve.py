"""Serve the whole app from one process: daphne plus every background role."""

from __future__ import annotations

import asyncio
import secrets

import daphne.server  # noqa: F401  installs the asyncio reactor before twisted is imported
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import connections

from newsroom.services import ServiceGroup, configured_services


class Command(BaseCommand):
    help = "Serve Newsroom (HTTP, WebSockets and background workers) from one process."

    def add_arguments(self, parser):
        parser.add_argument("--host", default=settings.NEWSROOM_HOST)
        parser.add_argument("--port", type=int, default=settings.NEWSROOM_PORT)
        parser.add_argument(
            "--no-migrate", action="store_true", help="Do not apply migrations first."
        )

    def handle(self, *args, host: str, port: int, no_migrate: bool, **options):
        if not no_migrate:
            call_command("migrate", interactive=False, verbosity=0)
        self.ensure_first_reader()
        connections.close_all()

        from daphne.endpoints import build_endpoint_description_strings
        from daphne.server import Server
        from twisted.internet import defer, reactor

        from newsroom.asgi import application

        group = ServiceGroup(configured_services())
        url_host = f"[{host}]" if ":" in host else host

        def ready() -> None:
            # daphne calls this before the reactor (and its asyncio loop) runs.
            reactor.callLater(0, group.start)
            names = ", ".join(s.name for s in group.services) or "none"
            self.stdout.write(
                self.style.SUCCESS(f"Newsroom is serving on http://{url_host}:{port}/")
                + f"\nBackground roles: {names}. Press Ctrl-C to stop."
            )
            self.stdout.flush()

        def stop_services():
            return defer.Deferred.fromFuture(asyncio.ensure_future(group.shutdown()))

        reactor.addSystemEventTrigger("before", "shutdown", stop_services)
        Server(
            application=application,
            endpoints=build_endpoint_description_strings(host=host, port=port),
            ready_callable=ready,
            verbosity=0,
        ).run()

    def ensure_first_reader(self) -> None:
        User = get_user_model()
        if User.objects.exists():
            names = list(User.objects.order_by("id").values_list("username", flat=True)[:3])
            self.stdout.write(
                f"Log in as one of: {', '.join(names)}. Lost a password? "
                ".venv/bin/python manage.py changepassword NAME"
            )
            return
        password = secrets.token_urlsafe(12)
        User.objects.create_superuser(username="admin", email="", password=password)
        self.stdout.write(
            self.style.WARNING(
                "Created the first reader (also an operator):\n"
                f"    username: admin\n    password: {password}\n"
                "Write it down: it is shown only this once. Change it under Password after "
                "logging in."
            )
        )
