"""Background roles that `manage.py serve` runs in-process beside daphne.

Each role is an object with a `name` and `async def run(stop: asyncio.Event)`
that returns once `stop` is set. Roles are listed in settings.NEWSROOM_SERVICES as
dotted paths to factories; a factory may return None to opt out (for example
when its role runs as its own process in the scale-out setup). The same roles
run standalone through their own management commands.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Protocol

from django.conf import settings
from django.utils.module_loading import import_string

log = logging.getLogger(__name__)


class Service(Protocol):
    name: str

    async def run(self, stop: asyncio.Event) -> None: ...


def configured_services() -> list[Service]:
    services = []
    for path in getattr(settings, "NEWSROOM_SERVICES", []):
        factory: Callable[[], Service | None] = import_string(path)
        service = factory()
        if service is not None:
            services.append(service)
    return services


class ServiceGroup:
    """Starts services as tasks on the running loop and stops them together."""

    def __init__(self, services: list[Service]) -> None:
        self.services = services
        self.stop = asyncio.Event()
        self.tasks: list[asyncio.Task] = []

    def start(self) -> None:
        for service in self.services:
            task = asyncio.get_running_loop().create_task(
                self._guard(service), name=f"service:{service.name}"
            )
            self.tasks.append(task)

    async def _guard(self, service: Service) -> None:
        from newsroom.ops.heartbeat import heartbeats

        # The process's heartbeat thread beats for the role while it runs.
        role = getattr(service, "role", service.name)
        beats = heartbeats()
        beats.add(role, detail=getattr(service, "heartbeat_detail", None))
        try:
            await self._run_guarded(service, role, beats)
        finally:
            beats.remove(role)

    async def _run_guarded(self, service: Service, role: str, beats) -> None:
        # A role that crashes is restarted after a pause: one bad moment must
        # not silently stop folding or fetching until the process restarts.
        while not self.stop.is_set():
            try:
                await service.run(self.stop)
                return
            except asyncio.CancelledError:
                raise
            except Exception as e:
                log.exception("service %s crashed; restarting in 5 s", service.name)
                beats.note(role, last_crash=f"{type(e).__name__}: {e}")
                try:
                    await asyncio.wait_for(self.stop.wait(), timeout=5)
                except TimeoutError:
                    pass

    async def shutdown(self, timeout: float = 10.0) -> None:
        self.stop.set()
        if not self.tasks:
            return
        done, pending = await asyncio.wait(self.tasks, timeout=timeout)
        for task in pending:
            log.warning("service task %s did not stop in %.0f s; cancelling", task.get_name(), timeout)
            task.cancel()
        if pending:
            await asyncio.wait(pending, timeout=2)
