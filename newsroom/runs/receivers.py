"""Carry fold outcomes and briefing progress into the run they belong to.

Wherever the signal fires (the fold worker's thread in `serve`, or a separate
fold_worker process), the update reaches the run's status:
1. the run executes in this process: straight onto its loop (live.deliver_local);
2. it runs in another process: over the channel layer to `run.<id>.exec`, which
   that process listens on;
3. it is not running (finished, interrupted): into the saved Run.status, under a
   row lock, and the change is published for anyone watching.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import connections, transaction
from django.dispatch import receiver

from fold_app.signals import delivery_folded
from newsroom.briefing.signals import briefing_progress
from newsroom.runs import live
from newsroom.runs.models import Run
from newsroom.runs.publish import exec_group_for, group_for, home_loop
from newsroom.runs.status import RunStatus

log = logging.getLogger(__name__)


@receiver(delivery_folded, dispatch_uid="runs.fold_outcome")
def on_delivery_folded(
    sender, delivery, items: int = 0, new_items: int = 0, **kwargs
) -> None:
    if not delivery.run_id:
        return
    payload = {"source": delivery.source_id, "items": int(items), "new": int(new_items)}
    if delivery.status == "failed":
        # A body that fetched fine but could not be read (an HTML page where a
        # feed was expected, a broken feed) turns the source's row red.
        payload["error"] = delivery.parse_error or "the body could not be read"
    _guarded(deliver, delivery.run_id, "fold", payload)


@receiver(briefing_progress, dispatch_uid="runs.model_progress")
def on_briefing_progress(
    sender, run_id=None, progress=None, message=None, **kwargs
) -> None:
    if run_id is None:
        return
    _guarded(
        deliver, run_id, "model", {"progress": dict(progress or {}), "message": message}
    )


# Receivers may be called from async code (a signal sent on an event loop), where
# the database cannot be used: the work then moves to this one thread, in order.
_offload = concurrent.futures.ThreadPoolExecutor(
    max_workers=1, thread_name_prefix="runs-receivers"
)


def _guarded(func, *args) -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        _call(func, *args)
    else:
        _offload.submit(_call_offloaded, func, *args)


def _call_offloaded(func, *args) -> None:
    try:
        _call(func, *args)
    finally:
        # This thread has no request cycle to close its connection for it.
        connections.close_all()


def _call(func, *args) -> None:
    # A receiver must never break the sender (the fold worker, the briefing).
    try:
        func(*args)
    except Exception:
        log.exception("could not carry an update into run %s", args[0])


def deliver(run_id: int, kind: str, payload: dict[str, Any]) -> str:
    """Route one update to the run's status; returns where it went (for tests):
    "local", "remote", "saved" or "gone"."""
    if live.deliver_local(run_id, kind, payload):
        return "local"
    state = Run.objects.filter(pk=run_id).values_list("state", flat=True).first()
    if state is None:
        return "gone"
    if state == Run.State.RUNNING:
        send_group(exec_group_for(run_id), {"type": f"run.{kind}", **payload})
        return "remote"
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        if run.state == Run.State.RUNNING:  # it started meanwhile
            send_group(exec_group_for(run_id), {"type": f"run.{kind}", **payload})
            return "remote"
        status = RunStatus.from_json(run.status or {}, run.pk, run.reader_id)
        change = apply_to(status, kind, payload)
        if change is None:
            return "saved"
        run.status = status.to_json()
        run.save(update_fields=["status"])
    send_group(group_for(run_id), {"type": "run.change", "change": change})
    return "saved"


def apply_to(status: RunStatus, kind: str, payload: dict[str, Any]):
    if kind == "fold":
        entry = status.sources.get(payload["source"])
        if entry is None:
            return None
        if payload.get("error"):
            error = payload["error"]
            return status.report(
                payload["source"],
                "error",
                message=f"{entry.get('title') or 'source'}: {error}",
                error=error,
            )
        category = payload.get("category") or entry.get("category", "")
        return status.fold_outcome(
            payload["source"], payload["items"], payload["new"], category
        )
    return status.set_model(payload["progress"], payload.get("message"))


def send_group(group: str, message: dict[str, Any]) -> None:
    """Send to a channel-layer group from any thread, fire and forget."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is not None:
        running.create_task(layer.group_send(group, message))
        return
    home = home_loop()
    if home is not None:
        # The in-memory layer's queues belong to this process's serving loop:
        # sending from another loop would touch them from the wrong thread.
        asyncio.run_coroutine_threadsafe(layer.group_send(group, message), home)
        return
    async_to_sync(layer.group_send)(group, message)
