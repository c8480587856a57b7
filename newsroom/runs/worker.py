"""Executing queued runs: claiming, recovery after a crash, the daily schedule.

The same `RunWorker` serves `manage.py run_worker` (its own process, scale-out)
and `serve` (a background role, in-process). Its `step` does one round and
returns True when it found work (go on at once) or False (wait a bit). Runs are
claimed with a conditional update and a row count, so any number of workers can
share the queue; the daily run is claimed the same way on RunSchedule.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import socket
from datetime import datetime, timedelta

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from newsroom.dbretry import Outage, drop_broken_connection, is_connection_error
from newsroom.runs.executor import RunExecutor
from newsroom.runs.models import Run, RunSchedule
from newsroom.runs.publish import group_for, set_home_loop
from newsroom.runs.receivers import send_group
from newsroom.runs.status import RunStatus
from newsroom.sources.models import Source

log = logging.getLogger(__name__)

# A running run whose process has not saved for this long is taken as dead
# (running runs save at least every HEARTBEAT seconds, see saver.py).
STALE_AFTER = timedelta(seconds=60)
MAX_RUNS_AT_ONCE = 2
IDLE_WAIT = 2.0

_TOKEN = secrets.token_hex(4)


def worker_tag() -> str:
    """This process: host, pid and a token (a reused pid is not the same process)."""
    return f"{socket.gethostname()}:{os.getpid()}:{_TOKEN}"


def _process_is_dead(tag: str) -> bool:
    host, _, rest = tag.partition(":")
    pid_text, _, token = rest.partition(":")
    if host != socket.gethostname() or not pid_text.isdigit():
        return False  # another machine: only the heartbeat can tell
    pid = int(pid_text)
    if pid == os.getpid():
        return token != _TOKEN
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


# -- queueing -----------------------------------------------------------------------


class RunAlreadyActive(Exception):
    def __init__(self, run: Run) -> None:
        super().__init__(f"run {run.pk} is already {run.get_state_display().lower()}")
        self.run = run


def queue_run(
    reader,
    trigger: str = Run.Trigger.MANUAL,
    source_ids=None,
    *,
    claim_for: str | None = None,
) -> Run:
    """Queue a run of the reader's sources (all, or `source_ids` only). One
    active run per reader: raises RunAlreadyActive if one is queued or running.
    `claim_for` (a worker tag) creates it already claimed by that process, so no
    worker can take it first (the terminal command runs its own)."""
    from django.contrib.auth import get_user_model

    with transaction.atomic():
        # Lock the reader's row: two clicks at once must not make two runs.
        get_user_model().objects.select_for_update().filter(pk=reader.pk).first()
        active = Run.objects.filter(reader=reader, state__in=Run.ACTIVE_STATES).first()
        if active is not None:
            raise RunAlreadyActive(active)
        fields = {}
        if claim_for is not None:
            now = timezone.now()
            fields = {
                "state": Run.State.RUNNING,
                "worker": claim_for,
                "started_at": now,
                "saved_at": now,
            }
        run = Run.objects.create(reader=reader, trigger=trigger, **fields)
        if source_ids is not None:
            status = RunStatus(run.pk, reader.pk)
            sources = Source.objects.filter(reader=reader, pk__in=source_ids)
            for source in sources.select_related("category"):
                category = source.category.name if source.category else ""
                status.add_source(
                    source.pk, source.display_title, category, source.kind
                )
            run.status = status.to_json()
            run.save(update_fields=["status"])
    if claim_for is None:
        transaction.on_commit(wake)
    return run


def resume_run(run: Run) -> bool:
    """Queue an interrupted run again; it fetches only the sources not done."""
    with transaction.atomic():
        if Run.objects.filter(
            reader=run.reader_id, state__in=Run.ACTIVE_STATES
        ).exists():
            return False
        resumed = Run.objects.filter(pk=run.pk, state=Run.State.INTERRUPTED).update(
            state=Run.State.QUEUED
        )
    if resumed:
        transaction.on_commit(wake)
    return resumed == 1


def claim_next_run(tag: str) -> Run | None:
    """Take the oldest queued run for this process, or None."""
    for pk in (
        Run.objects.filter(state=Run.State.QUEUED)
        .order_by("created_at", "id")
        .values_list("pk", flat=True)[:10]
    ):
        now = timezone.now()
        claimed = Run.objects.filter(pk=pk, state=Run.State.QUEUED).update(
            state=Run.State.RUNNING, worker=tag, saved_at=now
        )
        if claimed:
            Run.objects.filter(pk=pk, started_at__isnull=True).update(started_at=now)
            return Run.objects.select_related("reader").get(pk=pk)
    return None


def claim_run(run: Run, tag: str, from_state: str = Run.State.QUEUED) -> bool:
    """Claim one particular run (the terminal command does): queued, or an
    interrupted one to resume it directly."""
    now = timezone.now()
    claimed = Run.objects.filter(pk=run.pk, state=from_state).update(
        state=Run.State.RUNNING, worker=tag, saved_at=now
    )
    if claimed:
        Run.objects.filter(pk=run.pk, started_at__isnull=True).update(started_at=now)
        run.refresh_from_db()
    return claimed == 1


def recover_interrupted(now: datetime | None = None) -> list[int]:
    """Runs left "running" by a dead process become "interrupted"; returns their ids."""
    now = now or timezone.now()
    recovered = []
    for run in Run.objects.filter(state=Run.State.RUNNING).only(
        "pk", "worker", "saved_at"
    ):
        stale = run.saved_at is None or run.saved_at < now - STALE_AFTER
        if not (stale or _process_is_dead(run.worker)):
            continue
        with transaction.atomic():
            locked = (
                Run.objects.select_for_update()
                .filter(pk=run.pk, state=Run.State.RUNNING, worker=run.worker)
                .first()
            )
            if locked is None:
                continue
            status = RunStatus.from_json(
                locked.status or {}, locked.pk, locked.reader_id
            )
            change = status.set_run_state(
                Run.State.INTERRUPTED.value,
                "Interrupted: the process running it stopped; resume it to fetch the rest",
                level="warn",
            )
            locked.status = status.to_json()
            locked.state = Run.State.INTERRUPTED
            locked.worker = ""
            locked.save(update_fields=["status", "state", "worker"])
        send_group(group_for(run.pk), {"type": "run.change", "change": change})
        recovered.append(run.pk)
        log.warning(
            "run %s was left running by a dead process; marked interrupted", run.pk
        )
    return recovered


# -- the schedule -------------------------------------------------------------------


def queue_scheduled_runs(now: datetime | None = None) -> list[Run]:
    """Queue today's daily runs that are due, and retries of failing sources
    whose next attempt has come. Safe to call from any number of processes."""
    now = now or timezone.now()
    local = timezone.localtime(now)
    queued = []
    due = RunSchedule.objects.filter(
        run_at__isnull=False, run_at__lte=local.time()
    ).filter(Q(last_run_on__isnull=True) | Q(last_run_on__lt=local.date()))
    for schedule in due.select_related("reader"):
        claimed = RunSchedule.objects.filter(
            pk=schedule.pk, last_run_on=schedule.last_run_on
        ).update(last_run_on=local.date())
        if not claimed:
            continue
        try:
            queued.append(queue_run(schedule.reader, Run.Trigger.DAILY))
        except RunAlreadyActive:
            log.info(
                "daily run for %s skipped: a run is already active", schedule.reader
            )
    # A failing source is never dropped: it is retried when its backoff ends.
    failing = (
        Source.objects.filter(error_count__gt=0, next_attempt_at__lte=now)
        .exclude(reader__runs__state__in=Run.ACTIVE_STATES)
        .values_list("reader_id", "pk")
    )
    by_reader: dict[int, list[int]] = {}
    for reader_id, pk in failing:
        by_reader.setdefault(reader_id, []).append(pk)
    from django.contrib.auth import get_user_model

    for reader in get_user_model().objects.filter(pk__in=by_reader):
        try:
            queued.append(queue_run(reader, Run.Trigger.RETRY, by_reader[reader.pk]))
        except RunAlreadyActive:
            pass
    return queued


# -- the worker -----------------------------------------------------------------------

_wakers: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()


def wake() -> None:
    """Tell this process's workers a run was queued (others poll)."""
    for loop, event in list(_wakers):
        try:
            loop.call_soon_threadsafe(event.set)
        except RuntimeError:
            _wakers.discard((loop, event))


class RunWorker:
    name = "runs"
    role = "runs"  # its heartbeat role (newsroom/ops)

    def __init__(
        self, *, max_runs: int = MAX_RUNS_AT_ONCE, schedule: bool = True
    ) -> None:
        self.tag = worker_tag()
        self.max_runs = max_runs
        self.schedule = schedule
        self.tasks: set[asyncio.Task] = set()
        self.finished = 0
        self._next_sweep = 0.0
        self.outage = Outage("run worker", logger=log)

    def heartbeat_detail(self) -> dict:
        """Figures its heartbeat carries (read from the heartbeat thread)."""
        return {"running": len(self.tasks), "finished": self.finished}

    async def step(self) -> bool:
        """One round: recover and schedule (every 30 s), then claim a run if there
        is room. True: a run was started (look again at once)."""
        loop = asyncio.get_running_loop()
        if loop.time() >= self._next_sweep:
            self._next_sweep = loop.time() + 30
            await sync_to_async(recover_interrupted)()
            if self.schedule:
                await sync_to_async(queue_scheduled_runs)()
        if len(self.tasks) >= self.max_runs:
            return False
        run = await sync_to_async(claim_next_run)(self.tag)
        if run is None:
            return False
        log.info("executing run %s for %s", run.pk, run.reader)
        task = loop.create_task(self._execute(run), name=f"run:{run.pk}")
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return True

    async def _execute(self, run: Run) -> None:
        try:
            await RunExecutor(run).execute()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("run %s crashed", run.pk)
        self.finished += 1
        await brief_after(run)

    async def round(self) -> float:
        """`step` with its errors handled; the seconds to wait before the next
        round: 0 (a run was started: look again at once), IDLE_WAIT, or the
        backoff while the database is unreachable."""
        try:
            started = await self.step()
        except Exception as e:
            # The database away for a moment must not end the worker: say so
            # once, drop the broken connection, wait and go on.
            if not is_connection_error(e):
                log.exception("run worker: a round failed; retrying")
                return IDLE_WAIT
            await sync_to_async(drop_broken_connection)()
            return self.outage.failed(e, "a round (claim, recover, schedule)")
        self.outage.recovered()
        return 0 if started else IDLE_WAIT

    async def run(self, stop: asyncio.Event) -> None:
        wakeup = asyncio.Event()
        entry = (asyncio.get_running_loop(), wakeup)
        _wakers.add(entry)
        set_home_loop(entry[0])
        try:
            while not stop.is_set():
                wait = await self.round()
                if not wait:
                    continue
                wakeup.clear()
                waiters = [
                    asyncio.ensure_future(stop.wait()),
                    asyncio.ensure_future(wakeup.wait()),
                ]
                await asyncio.wait(
                    waiters, timeout=wait, return_when=asyncio.FIRST_COMPLETED
                )
                for waiter in waiters:
                    waiter.cancel()
        finally:
            _wakers.discard(entry)
            set_home_loop(None)
            # Stopping: running runs end as "interrupted" with their state saved.
            for task in list(self.tasks):
                task.cancel()
            if self.tasks:
                await asyncio.wait(list(self.tasks), timeout=10)


async def brief_after(run: Run) -> None:
    """Write the day's briefing once a run is done (settings.NEWSROOM_BRIEF_AFTER_RUN)."""
    if not settings.NEWSROOM_BRIEF_AFTER_RUN:
        return
    await sync_to_async(run.refresh_from_db)(fields=["state"])
    if run.state != Run.State.DONE:
        return
    from newsroom.briefing.after_run import brief_after_run

    try:
        # Its own thread: it waits for the fold and must not hold the one
        # thread the rest of the app's synchronous database work runs on.
        await sync_to_async(brief_after_run, thread_sensitive=False)(run)
    except Exception:
        log.exception("briefing after run %s failed", run.pk)


def service() -> RunWorker | None:
    """The `serve` role; None when run_worker processes execute the runs."""
    if settings.NEWSROOM_RUN_WORKER == "external":
        return None
    return RunWorker()
