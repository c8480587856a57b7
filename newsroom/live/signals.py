"""Django signals carried to every process's hub over the channel layer.

Logging out, storing a briefing and creating a run happen in whatever process
serves that request or job; the reader's group `live.reader.<id>` reaches every
web process that has a stream of that reader open.
"""

from __future__ import annotations

import asyncio
import logging

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.contrib.auth.signals import user_logged_out
from django.db import transaction
from django.db.models.signals import post_save

from newsroom.briefing.signals import briefing_stored
from newsroom.live.hub import reader_group
from newsroom.runs.models import Run

log = logging.getLogger(__name__)


def tell_reader(reader_id: int, message: dict) -> None:
    """Send a message to the reader's live group from sync or async code."""
    layer = get_channel_layer()
    if layer is None:
        return
    group = reader_group(reader_id)
    message = {"reader": reader_id, **message}
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    try:
        if loop is not None:
            loop.create_task(layer.group_send(group, message))
        else:
            async_to_sync(layer.group_send)(group, message)
    except Exception:
        # Live pages are a view; a layer hiccup must not fail a logout or a save.
        log.exception(
            "could not tell reader %s's pages (%s)", reader_id, message["type"]
        )


def on_logged_out(sender, request, user, **kwargs) -> None:
    if user is not None and user.pk is not None:
        tell_reader(user.pk, {"type": "live.logout"})


def on_briefing_stored(sender, briefing=None, reader=None, **kwargs) -> None:
    reader_id = getattr(reader, "pk", reader) or getattr(briefing, "reader_id", None)
    if reader_id is not None:
        transaction.on_commit(
            lambda: tell_reader(int(reader_id), {"type": "live.article"})
        )


def on_run_saved(sender, instance: Run, created: bool, **kwargs) -> None:
    if created:
        reader_id, run_id = instance.reader_id, instance.pk
        transaction.on_commit(
            lambda: tell_reader(reader_id, {"type": "live.run", "run": run_id})
        )


def connect() -> None:
    user_logged_out.connect(on_logged_out, dispatch_uid="live-logout")
    briefing_stored.connect(on_briefing_stored, dispatch_uid="live-briefing")
    post_save.connect(on_run_saved, sender=Run, dispatch_uid="live-run-created")
