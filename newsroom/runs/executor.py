"""The run executor: every source of a run, fetched concurrently and safely.

One executor runs one run on the current event loop:
- bounded concurrency overall and per host (asyncio semaphores; a task waits for
  its host's slot before taking a global one, so a busy host never holds slots
  other hosts could use);
- each source ends in ONE status write (state, count, timing and log line
  together), made only after its delivery and health are committed, so a resumed
  run never skips a source whose body was lost;
- status changes mark the run unsaved (RunSaver, at most one save a second) and
  are published to the channel layer in order (Publisher);
- fold outcomes and model progress for this run arrive from other threads
  (live.deliver_local) or processes (group `run.<id>.exec`) and become changes.

No source's failure can stop the run: every failure becomes that source's error.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connections
from django.utils import timezone

from fold_app.models import Delivery
from newsroom.dbretry import Outage, is_connection_error
from newsroom.fetch import FetchError, FetchResult, fetch, make_client
from newsroom.runs import live
from newsroom.runs.extract import (
    LINKS_CONTENT_TYPE,
    BadPattern,
    extract_links,
    links_body,
    looks_like_html,
)
from newsroom.runs.health import next_attempt
from newsroom.runs.journal import JournalWriter, Write
from newsroom.runs.kinds import RenderError, renderer_for
from newsroom.runs.models import Run
from newsroom.runs.publish import Publisher, exec_group_for
from newsroom.runs.receivers import apply_to
from newsroom.runs.saver import RunSaver
from newsroom.runs.status import Change, RunStatus
from newsroom.sources.models import Source

log = logging.getLogger(__name__)

try:  # what a channel layer that lost its Redis raises
    from redis.exceptions import ConnectionError as _RedisDown
    from redis.exceptions import TimeoutError as _RedisSlow

    _LAYER_DOWN: tuple[type[BaseException], ...] = (OSError, _RedisDown, _RedisSlow)
except ImportError:  # pragma: no cover - the in-memory layer only
    _LAYER_DOWN = (OSError,)

SAVE_TICK = 0.2  # how often the saver looks for due runs (each run: <= 1 save/s)


@dataclass
class Outcome:
    state: str  # ok, not_modified, error
    message: str  # the log line, without the source's title
    error: str = ""
    count: int | None = None
    level: str | None = None
    delivery: dict[str, Any] | None = None
    result: FetchResult | None = None
    retry_after: datetime | None = None
    health: bool = True  # False: do not touch the source's health (not fetched)


def _size(n: int) -> str:
    if n >= 1024 * 1024:
        return f"{n / (1024 * 1024):.1f} MiB"
    if n >= 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n} bytes"


@dataclass
class RunSummary:
    ok: int = 0
    not_modified: int = 0
    error: int = 0
    skipped: int = 0
    seconds: float = 0.0
    errors: list[tuple[str, str]] = field(default_factory=list)


class RunExecutor:
    def __init__(
        self,
        run: Run,
        *,
        client=None,
        concurrency: int | None = None,
        per_host: int | None = None,
        saver: RunSaver | None = None,
        publisher: Publisher | None = None,
        retry_interval: timedelta | None = None,
        now: Callable[[], datetime] = timezone.now,
        listen: bool = True,
    ) -> None:
        self.run = run
        self.client = client
        self.concurrency = concurrency or settings.NEWSROOM_RUN_CONCURRENCY
        self.per_host = per_host or settings.NEWSROOM_RUN_PER_HOST
        self.saver = saver or RunSaver()
        self.publisher = publisher if publisher is not None else Publisher()
        self.retry_interval = retry_interval or timedelta(
            seconds=settings.NEWSROOM_SOURCE_RETRY_INTERVAL
        )
        self.now = now
        self.listen = listen
        self.observers: list[Callable[[Change], None]] = []
        self.status: RunStatus | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.changes = 0
        self.listening = asyncio.Event()  # set once `run.<id>.exec` is subscribed
        self._host_slots: dict[str, asyncio.Semaphore] = {}
        self._slots = asyncio.Semaphore(self.concurrency)
        self.summary = RunSummary()
        # Its journal writes and its saves: one outage, said once per run.
        self.outage = Outage(f"run {run.pk}", first=0.2, cap=5.0, logger=log)

    # -- status writes -------------------------------------------------------------

    def emit(self, change: Change) -> None:
        self.changes += 1
        self.saver.mark(self.status)
        self.publisher.publish(change)
        for observer in self.observers:
            observer(change)

    def apply_update(self, kind: str, payload: dict[str, Any]) -> None:
        """A fold outcome or model progress for this run (on the run's loop)."""
        if self.status is None:
            return
        if kind not in ("fold", "model"):
            return
        change = apply_to(self.status, kind, payload)
        if change is not None:
            self.emit(change)

    # -- the run -------------------------------------------------------------------

    async def execute(self) -> RunStatus:
        """Fetch every source of the run not yet done; returns the final status.
        The run must already be claimed (state running)."""
        self.loop = asyncio.get_running_loop()
        started = time.monotonic()
        run = self.run
        saved = run.status or {}
        if saved:  # resumed, or queued with a chosen set of sources
            self.status = RunStatus.from_json(saved, run.pk, run.reader_id)
        else:
            self.status = RunStatus(run.pk, run.reader_id)
        status = self.status
        sources = await sync_to_async(self._load_sources)()
        self.publisher.start()
        resuming = bool(saved) and saved.get("run_state") != "queued"
        # A fresh run takes every source the reader has. So does a run whose
        # process died before its first save: recovery saved only "interrupted"
        # and a log line, no source list (a run queued with its own set of
        # sources has that set saved from the start, with run_state "queued").
        if not saved or (not status.sources and saved.get("run_state") != "queued"):
            for source in sources.values():
                category = source.category.name if source.category else ""
                self.emit(
                    status.add_source(
                        source.pk, source.display_title, category, source.kind
                    )
                )
        done = status.done_ids()
        todo = [sid for sid in status.sources if sid not in done]
        if resuming and done:
            message = (
                f"Resumed: {len(todo)} of {len(status.sources)} sources left to fetch"
            )
        else:
            message = f"Run started: {len(todo)} source{'' if len(todo) == 1 else 's'}"
        self.emit(status.set_run_state("running", message))
        self.saver.watch(status)
        live.register(run.pk, self)
        writer = self.writer = JournalWriter(run, outage=self.outage)
        writer.start()
        own_client = self.client is None
        client = self.client or make_client(max_connections=self.concurrency)
        tasks: list[asyncio.Task] = []
        helpers = [asyncio.create_task(self._save_loop(), name=f"run{run.pk}:saver")]
        if self.listen and self.publisher.layer is not None:
            helpers.append(
                asyncio.create_task(self._listen(), name=f"run{run.pk}:listen")
            )
        final_state, final_message = Run.State.DONE, ""
        try:
            for sid in todo:
                tasks.append(
                    asyncio.create_task(
                        self._one(sid, sources.get(sid), client, writer)
                    )
                )
            await asyncio.gather(*tasks)
        except asyncio.CancelledError:
            for task in tasks:
                task.cancel()
            final_state = Run.State.INTERRUPTED
            final_message = (
                "Interrupted: the process is stopping; resume it to fetch the rest"
            )
            raise
        except Exception as e:
            # A bug, not a source's failure (those never raise): record it.
            log.exception("run %s failed", run.pk)
            final_state = Run.State.FAILED
            final_message = f"Run failed: {e}"
        finally:
            live.unregister(run.pk)
            for helper in helpers:
                helper.cancel()
            await asyncio.gather(*helpers, return_exceptions=True)
            await writer.close()
            if own_client:
                await client.aclose()
            self.summary.seconds = time.monotonic() - started
            counts = status.counts
            if not final_message:
                final_message = (
                    f"Run finished in {self.summary.seconds:.1f} s: {counts['ok']} ok, "
                    f"{counts['not_modified']} not modified, {counts['error']} failed"
                )
            self.emit(
                status.set_run_state(
                    str(final_state.value),
                    final_message,
                    level="error" if final_state == "failed" else "info",
                )
            )
            await asyncio.shield(
                sync_to_async(self.saver.flush)(
                    status, state=final_state, finished_at=timezone.now(), worker=""
                )
            )
            self.saver.forget(run.pk)
            await self.publisher.close()
            # The worker thread's connection would otherwise stay open (and idle)
            # until the process ends.
            await sync_to_async(connections.close_all)()
        return status

    def _load_sources(self) -> dict[int, Source]:
        query = Source.objects.filter(reader_id=self.run.reader_id).select_related(
            "category"
        )
        return {s.pk: s for s in query}

    async def _save_loop(self) -> None:
        while True:
            await asyncio.sleep(SAVE_TICK)
            due = self.saver.take_due()
            if not due:
                continue
            try:
                await sync_to_async(self.saver.write)(due)
            except Exception as e:
                # A busy or unreachable database must not stop the run: keep the
                # run unsaved and try again (after a backoff while it is away).
                self.saver.mark(self.status)
                if is_connection_error(e):
                    await asyncio.sleep(self.outage.failed(e, "a save of its status"))
                else:
                    log.exception("saving run %s failed; retrying", self.run.pk)
            else:
                self.outage.recovered()

    async def _listen(self) -> None:
        """Fold outcomes and model progress sent by other processes."""
        layer = self.publisher.layer
        group = exec_group_for(self.run.pk)
        channel = await layer.new_channel()
        await layer.group_add(group, channel)
        self.listening.set()
        try:
            failures = 0
            while True:
                try:
                    message = await layer.receive(channel)
                except _LAYER_DOWN as e:
                    task = asyncio.current_task()
                    if task is not None and task.cancelling():
                        # channels_redis can turn our cancellation into the
                        # error of the receive it interrupted: we are stopping.
                        raise asyncio.CancelledError from e
                    # Redis restarted or unreachable: keep listening, and join
                    # the group again (a restarted Redis has forgotten it), or
                    # fold outcomes would stop reaching this run for good.
                    failures += 1
                    if failures == 1:
                        log.warning("run %s: channel layer unreachable: %s", self.run.pk, e)
                    await asyncio.sleep(min(0.1 * 2**failures, 2.0))
                    try:
                        await layer.group_add(group, channel)
                        failures = 0
                    except Exception:  # noqa: BLE001 - still down; retry
                        pass
                    continue
                kind = {"run.fold": "fold", "run.model": "model"}.get(
                    message.get("type")
                )
                if kind:
                    self.apply_update(kind, message)
        finally:
            try:
                await layer.group_discard(group, channel)
            except Exception:  # the layer may be gone at shutdown
                pass

    def _host_slot(self, url: str) -> asyncio.Semaphore:
        try:
            host = (urlsplit(url).hostname or "").lower()
        except ValueError:
            host = ""
        slot = self._host_slots.get(host)
        if slot is None:
            slot = self._host_slots[host] = asyncio.Semaphore(self.per_host)
        return slot

    # -- one source ----------------------------------------------------------------

    async def _one(
        self, sid: int, source: Source | None, client, writer: JournalWriter
    ) -> None:
        status = self.status
        title = status.sources[sid]["title"] or str(sid)
        if source is None:
            self.emit(
                status.report(
                    sid,
                    "error",
                    message=f"{title}: this source was deleted",
                    error="this source was deleted",
                )
            )
            return
        started = time.monotonic()
        try:
            outcome = await self._skip_if_asked_to_wait(source)
            if outcome is None:
                async with self._host_slot(source.url), self._slots:
                    started = time.monotonic()
                    self.emit(
                        status.report(
                            sid, "fetching", message=f"{title}: fetching", level="debug"
                        )
                    )
                    outcome = await self._collect(source, client)
            if outcome.health:
                write = Write(source, self._health(source, outcome), outcome.delivery)
                try:
                    await writer.submit(write)
                except Exception as e:
                    if not is_connection_error(e):  # an outage: said once already
                        log.exception("journal write for source %s failed", sid)
                    outcome = Outcome(
                        "error",
                        f"fetched, but could not be stored: {e}",
                        error=f"could not be stored: {e}",
                    )
        except asyncio.CancelledError:
            raise
        except Exception as e:  # never let one source take the run down
            log.exception("source %s failed unexpectedly", sid)
            outcome = Outcome(
                "error", f"internal error: {e}", error=f"internal error: {e}"
            )
        ms = int((time.monotonic() - started) * 1000)
        if outcome.state == "error":
            self.summary.error += 1
            self.summary.errors.append((title, outcome.error))
        elif outcome.state == "ok":
            self.summary.ok += 1
        else:
            self.summary.not_modified += 1
        self.emit(
            status.report(
                sid,
                outcome.state,
                message=f"{title}: {outcome.message}",
                count=outcome.count,
                ms=ms,
                error=outcome.error,
                level=outcome.level,
            )
        )

    async def _skip_if_asked_to_wait(self, source: Source) -> Outcome | None:
        now = self.now()
        if source.retry_after is not None and source.retry_after > now:
            until = timezone.localtime(source.retry_after)
            error = f"not fetched: the server asked us to wait until {until:%Y-%m-%d %H:%M %Z}"
            self.summary.skipped += 1
            return Outcome("error", error, error=error, health=False)
        return None

    async def _collect(self, source: Source, client) -> Outcome:
        try:
            if source.kind == Source.Kind.BROWSER:
                return await self._collect_browser(source)
            result = await fetch(
                source.url,
                etag=source.etag or None,
                last_modified=source.last_modified or None,
                client=client,
            )
        except FetchError as e:
            return Outcome("error", str(e), error=str(e), retry_after=e.retry_after)
        if result.not_modified:
            return Outcome("not_modified", "not modified", result=result)
        if not result.body:
            return Outcome(
                "error",
                "the server sent an empty body",
                error="the server sent an empty body",
                result=result,
            )
        if source.kind == Source.Kind.SCRAPE:
            return await self._links(
                source,
                result.url,
                result.text(),
                Delivery.Kind.SCRAPE,
                result=result,
                note=result.charset_note,
            )
        return self._feed(result)

    def _feed(self, result: FetchResult) -> Outcome:
        notes = []
        level = None
        if looks_like_html(result.content_type, result.body):
            # Journaled all the same: the fold worker decides (it may find a feed link).
            notes.append(
                "it is an HTML page, not a feed; journaled for the fold worker"
            )
            level = "warn"
        if result.charset_note:
            notes.append(result.charset_note)
            level = "warn"
        message = f"ok, {_size(len(result.body))}" + "".join(f"; {n}" for n in notes)
        delivery = {
            "body": result.body,
            "content_type": result.raw_content_type,
            "kind": Delivery.Kind.FEED,
            "url": result.url,
        }
        return Outcome("ok", message, level=level, delivery=delivery, result=result)

    async def _links(
        self,
        source: Source,
        page_url: str,
        html: str,
        kind: str,
        *,
        result=None,
        note="",
    ) -> Outcome:
        try:
            # Parsing a large page takes a while: keep it off the event loop.
            entries = await asyncio.to_thread(
                extract_links, html, page_url, source.link_pattern
            )
        except BadPattern as e:
            return Outcome("error", str(e), error=str(e), result=result)
        level = None
        message = f"ok, {len(entries)} link{'s' if len(entries) != 1 else ''}"
        if not entries:
            level = "warn"
            message += (
                " (no link matched the pattern)"
                if source.link_pattern
                else " (no links to this site on the page)"
            )
        if note:
            level = "warn"
            message += f"; {note}"
        delivery = {
            "body": links_body(page_url, entries),
            "content_type": LINKS_CONTENT_TYPE,
            "kind": kind,
            "url": page_url,
        }
        return Outcome(
            "ok",
            message,
            count=len(entries),
            level=level,
            delivery=delivery,
            result=result,
        )

    async def _collect_browser(self, source: Source) -> Outcome:
        render = renderer_for("browser")
        if render is None:
            error = (
                "browser sources need the browser sessions part, which is not "
                "available here (no renderer registered)"
            )
            return Outcome("error", error, error=error)
        limit = settings.NEWSROOM_FETCH_TIMEOUT * 2
        try:
            async with asyncio.timeout(limit):
                page = await render(source)
        except RenderError as e:
            return Outcome("error", str(e), error=str(e))
        except TimeoutError:
            error = f"rendering timed out after {limit:g} s"
            return Outcome("error", error, error=error)
        return await self._links(source, page.url, page.html, Delivery.Kind.BROWSER)

    def _health(self, source: Source, outcome: Outcome) -> dict[str, Any]:
        now = self.now()
        health: dict[str, Any] = {"last_status": outcome.state, "last_fetched_at": now}
        if outcome.state == "error":
            count = source.error_count + 1
            health.update(
                last_error=outcome.error,
                error_count=count,
                next_attempt_at=next_attempt(
                    now, count, self.retry_interval, outcome.retry_after
                ),
                retry_after=outcome.retry_after,
            )
        else:
            health.update(
                last_error="",
                error_count=0,
                last_success_at=now,
                next_attempt_at=None,
                retry_after=None,
            )
            result = outcome.result
            if result is not None and not result.not_modified:
                health.update(
                    etag=result.etag[:500], last_modified=result.last_modified[:100]
                )
        return health
