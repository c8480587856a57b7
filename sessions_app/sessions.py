"""Browser sessions as the views and commands use them: scrape (and keep),
act on a kept page, screenshot, close.

Sync code: database work here, browser work on the pool's loop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.utils import timezone

from sessions_app import browser as host_mod
from sessions_app.models import BrowserSession
from sessions_app.netrule import Refused, check_url
from sessions_app.pool import ActionFailed, PageGone, PoolUser
from sessions_app.registry import Registry, RegistryLimits, SessionError
from sessions_app.secrets import MissingSecret, fill

log = logging.getLogger(__name__)
MIB = 1024 * 1024
ACTIONS = ("click", "type", "press", "scroll", "wait", "goto", "state", "screenshot")


@dataclass
class Outcome:
    session: BrowserSession
    url: str
    title: str
    message: str = ""
    navigated: str = ""  # "from -> to" when the page moved away
    blocked: list[str] = field(default_factory=list)
    html: str = ""
    png: bytes | None = None

    def as_json(self) -> dict[str, Any]:
        data = {
            "id": self.session.pk,
            "state": self.session.state,
            "url": self.url,
            "title": self.title,
            "message": self.message,
            "navigated": self.navigated,
            "blocked": self.blocked,
        }
        if self.html:
            data["html"] = self.html
        return data


def limits() -> RegistryLimits:
    return RegistryLimits(
        idle=settings.NEWSROOM_SESSION_IDLE, ttl=settings.NEWSROOM_SESSION_TTL
    )


def registry_for(host, clock: Callable[[], datetime] = timezone.now) -> Registry:
    # Records without a page may take about one tab's memory.
    tab_mb = (host.tab_mb if host else None) or settings.NEWSROOM_BROWSER_TAB_MB
    return Registry(
        host.tag if host else "",
        limits=limits(),
        max_record_bytes=int(tab_mb * MIB),
        clock=clock,
    )


class Sessions(PoolUser):
    @property
    def timeout(self) -> float:
        return settings.NEWSROOM_BROWSER_TIMEOUT

    def _host(self):
        try:
            return host_mod.ensure_browser()
        except host_mod.BrowserUnavailable as e:
            raise SessionError(503, str(e)) from None

    def registry(self, host=None) -> Registry:
        return registry_for(
            host if host is not None else host_mod.current_host(), self.clock
        )

    # --- open ---

    def scrape(
        self, owner, url: str, *, keep: bool, wait_for: str | None = None
    ) -> Outcome:
        """Render `url`; with `keep`, its page stays open as a session."""
        _checked(url)
        host = self._host()
        reg = self.registry(host)
        options = {"wait_for": wait_for} if wait_for else {}
        if not keep:
            state = self._call(
                self.pool.render(host.ws_url, url, [], wait_for, self.timeout)
            )
            record = reg.insert(owner, url, options)
            return Outcome(
                record, state.url, state.title, html=state.html, blocked=state.blocked
            )
        record = reg.insert(owner, url, options)
        try:
            return self._open(host, reg, record, html=True)
        except SessionError as e:
            # Kept with its reason, so the sessions page says what happened.
            reg.mark_closed(record.pk, f"it could not be opened: {e}")
            raise

    def _open(
        self, host, reg: Registry, record: BrowserSession, *, html: bool
    ) -> Outcome:
        from sessions_app.reaper import Reaper

        cap = Reaper(self.pool, self.clock, self.available).sweep(extra=1).cap
        with reg.reserve(cap):
            context_id, target_id, state = self._call(
                self._open_page(
                    host.ws_url, record.url, record.options.get("wait_for"), html
                )
            )
            reg.mark_open(
                record,
                context_id=context_id,
                target_id=target_id,
                current_url=state.url[:2000],
                title=state.title[:500],
            )
        log.info("browser session %s opened for reader %s", record.pk, record.owner_id)
        return Outcome(
            record, state.url, state.title, html=state.html, blocked=state.blocked
        )

    async def _open_page(self, ws_url: str, url: str, wait_for: str | None, html: bool):
        context_id, target_id, page = await self.pool.new_kept_page(ws_url)
        try:
            await self.pool.load(page, url, wait_for, self.timeout)
            return context_id, target_id, await self.pool.state(page, html=html)
        except BaseException:
            await self.pool.dispose(ws_url, context_id)
            raise

    # --- act ---

    def act(self, owner, sid: str, action: str, **params: Any) -> Outcome:
        if action not in ACTIONS:
            raise SessionError(
                400, f"unknown action {action!r}; use one of {', '.join(ACTIONS)}"
            )
        host = host_mod.current_host()
        reg = self.registry(host)
        record = reg.get(sid, owner)
        if host is None or not host_mod.probe(host):
            if record.state == BrowserSession.State.OPEN:
                reg.mark_closed(sid, "the browser exited")
                raise SessionError(
                    410,
                    f"browser session {sid} is closed: the browser exited; scrape the page again",
                )
            host = self._host()
            reg = self.registry(host)
        message = ""
        if action == "goto":
            _checked(params.get("url", ""))
        if action == "type":
            text = str(params.get("text", ""))
            try:
                params["text"], names = fill(owner, text)
            except MissingSecret as e:
                raise SessionError(400, str(e)) from None
            # Never echo typed text: it may carry a secret.
            message = f"typed {len(text)} characters" + (
                f" with secret {', '.join(names)}" if names else ""
            )
        if record.state == BrowserSession.State.NOT_OPENED:
            self._open(host, reg, record, html=False)
        reg.touch(record, busy=True)
        before = record.current_url
        try:
            png, state = self._call(
                self._act(host.ws_url, record.target_id, action, params)
            )
        except SessionError as e:
            reg.touch(record)
            if action == "type":  # an error must not carry what was typed
                raise SessionError(e.status, _scrub(str(e), params["text"])) from None
            raise
        except PageGone:
            reg.mark_closed(sid, "its page was closed in the browser")
            raise SessionError(
                410,
                f"browser session {sid} is closed: its page was closed in the browser; scrape the page again",
            ) from None
        except BaseException:
            reg.touch(record)
            raise
        reg.touch(record, current_url=state.url[:2000], title=state.title[:500])
        navigated = f"{before} -> {state.url}" if before and state.url != before else ""
        if navigated and not message:
            message = f"the page navigated away to {state.url}"
        log.info("browser session %s: %s", sid, action)
        return Outcome(
            record, state.url, state.title, message, navigated, state.blocked, png=png
        )

    async def _act(self, ws_url: str, target_id: str, action: str, params: dict):
        page = await self.pool.page(ws_url, target_id)
        png = await self.pool.act(page, action, params, self.timeout)
        return png, await self.pool.state(page)

    def close(
        self, owner, sid: str, reason: str = "the reader closed it"
    ) -> BrowserSession:
        reg = self.registry()
        record = reg.get(sid, owner)
        self.close_record(record, reason)
        record.refresh_from_db()
        return record

    def close_record(
        self, record: BrowserSession, reason: str, *, expect_used=None
    ) -> bool:
        reg = self.registry()
        was_open = record.state == BrowserSession.State.OPEN
        if not reg.mark_closed(record.pk, reason, expect_used=expect_used):
            return False
        host = host_mod.current_host()
        if (
            was_open
            and record.context_id
            and host is not None
            and record.tag == host.tag
        ):
            try:
                self._call(self.pool.dispose(host.ws_url, record.context_id))
            except Exception as e:  # the browser may be gone already
                log.debug("closing %s in the browser: %s", record.pk, e)
        log.info("browser session %s closed: %s", record.pk, reason)
        return True

    def _call(self, coro):
        try:
            return self.pool.run(coro)
        except Refused as e:
            raise SessionError(400, str(e)) from None
        except ActionFailed as e:
            raise SessionError(422, str(e)) from None
        except TimeoutError:
            raise SessionError(504, "the browser did not answer in time") from None


def _scrub(message: str, typed: str) -> str:
    if typed:
        message = message.replace(typed, "[typed text]")
    return message


def _checked(url: str) -> None:
    try:
        check_url(url)
    except Refused as e:
        raise SessionError(400, str(e)) from None
