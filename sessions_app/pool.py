"""This process's connection to the shared Chromium, and what it does with pages.

Playwright objects belong to one event loop, so the pool runs its own loop on a
daemon thread; sync views call `run(...)`, async code `await arun(...)`. The
connection is a per-process cache: which pages exist and who owns them is in the
database, and every process attaches to the same browser over CDP.

Kept pages live in browser contexts created over raw CDP with
disposeOnDetach=false: a context Playwright creates is disposed when the
connection that created it goes, and the page must outlive that process.
Playwright lists such pages under the browser's default context, so context
work (cookies) goes through CDP with the context id.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from django.conf import settings
from django.utils import timezone

from sessions_app.egress import REFUSED_HEADER
from sessions_app.netrule import Refused, acheck_url, explain_egress_failure

log = logging.getLogger(__name__)
T = TypeVar("T")


class PageGone(Exception):
    """The page is no longer in the browser."""


class ActionFailed(Exception):
    """An action could not be done; str() says why in plain words."""


# How Chromium reports a CONNECT its proxy answered with anything but 200:
# a page request (net error) and a WebSocket (handshake error) respectively.
TUNNEL_FAILED = ("ERR_TUNNEL_CONNECTION_FAILED", "tunnel via proxy server failed")
_REFUSED = REFUSED_HEADER.lower()


@dataclass(frozen=True)
class _Unexplained:
    """A connection the egress proxy would not make; why is worked out when
    the refusals are read (it takes a DNS lookup, too slow for an event)."""

    url: str


@dataclass
class PageState:
    url: str
    title: str
    html: str = ""
    blocked: list[str] = field(default_factory=list)


def _short(e: Exception) -> str:
    return str(e).splitlines()[0][:300] if str(e) else type(e).__name__


class Pool:
    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self._pw = None
        self._browser = None
        self._ws = ""
        self._pages: dict[str, Any] = {}  # target id -> Page, for this connection
        # id(page) -> the rule's refusals since the page's last action
        self._blocked: dict[int, list[str | _Unexplained]] = {}
        self._guarded: set[int] = set()  # id(page) of pages routed through the rule
        self._render_slots: asyncio.Semaphore | None = None

    # --- the loop thread ---

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=loop.run_forever, name="browser-pool", daemon=True
                )
                thread.start()
                self._loop = loop
            return self._loop

    def run(self, coro: Awaitable[T], timeout: float | None = None) -> T:
        """Run `coro` on the pool's loop and wait for it (from sync code)."""
        loop = self._ensure_loop()
        future = asyncio.run_coroutine_threadsafe(coro, loop)
        return future.result(timeout or settings.NEWSROOM_BROWSER_TIMEOUT * 3)

    async def arun(self, coro: Awaitable[T]) -> T:
        loop = self._ensure_loop()
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, loop))

    # --- connection ---

    async def browser(self, ws_url: str):
        if (
            self._browser is not None
            and self._ws == ws_url
            and self._browser.is_connected()
        ):
            return self._browser
        await self._disconnect()
        if self._pw is None:
            from playwright.async_api import async_playwright

            self._pw = await async_playwright().start()
        endpoint = ws_url.split("/devtools/")[0].replace("ws://", "http://")
        self._browser = await self._pw.chromium.connect_over_cdp(
            endpoint, timeout=settings.NEWSROOM_BROWSER_TIMEOUT * 1000
        )
        self._ws = ws_url
        return self._browser

    async def _disconnect(self) -> None:
        browser, self._browser = self._browser, None
        self._pages.clear()
        self._guarded.clear()
        self._blocked.clear()
        if browser is not None:
            try:
                await browser.close()  # disconnects; our kept contexts are not its own
            except Exception:
                pass

    async def stop(self) -> None:
        await self._disconnect()
        if self._pw is not None:
            await self._pw.stop()
            self._pw = None

    async def _cdp(self, ws_url: str):
        return await (await self.browser(ws_url)).new_browser_cdp_session()

    async def targets(self, ws_url: str) -> set[str]:
        session = await self._cdp(ws_url)
        try:
            infos = (await session.send("Target.getTargets"))["targetInfos"]
        finally:
            await session.detach()
        return {t["targetId"] for t in infos if t.get("type") == "page"}

    # --- pages ---

    async def _target_id(self, page) -> str:
        session = await page.context.new_cdp_session(page)
        try:
            return (await session.send("Target.getTargetInfo"))["targetInfo"][
                "targetId"
            ]
        finally:
            await session.detach()

    async def page(self, ws_url: str, target_id: str, *, attempts: int = 1):
        """The Page for `target_id` in this process, guarded; PageGone if none.

        `attempts` > 1 waits a little for a page that is still attaching."""
        browser = await self.browser(ws_url)
        for attempt in range(attempts):
            page = self._pages.get(target_id)
            if page is None:
                page = await self._scan(browser, target_id)
            if page is not None and not page.is_closed():
                if id(page) not in self._guarded:
                    await self._guard(page)
                return page
            if attempt + 1 < attempts:
                await asyncio.sleep(0.05)
        raise PageGone(target_id)

    async def _scan(self, browser, target_id: str):
        # Pages of contexts this connection did not create are listed under the
        # default context; learn their target ids once and remember them.
        known = {id(p) for p in self._pages.values()}
        for context in browser.contexts:
            for candidate in context.pages:
                if candidate.is_closed() or id(candidate) in known:
                    continue
                try:
                    tid = await self._target_id(candidate)
                except Exception:
                    continue
                self._pages[tid] = candidate
        return self._pages.get(target_id)

    async def _guard(self, page) -> None:
        """Route every request of the page through the private-network rule,
        and note what the browser's egress proxy refused behind it.

        Each process that drives the page adds its own route: routes belong to a
        connection and vanish with it. The route is the friendly layer (it names
        each refusal on the page); the proxy is the one nothing gets around, and
        it sees what routes do not: WebSockets, service workers, prefetches,
        redirects of subresources, a name that resolves elsewhere the second time."""
        self._guarded.add(id(page))
        refusals = self._blocked.setdefault(id(page), [])

        def refused_response(response) -> None:
            why = response.headers.get(_REFUSED)
            if why:
                refusals.append(why)

        def refused_request(request) -> None:
            if any(t in (request.failure or "") for t in TUNNEL_FAILED):
                refusals.append(_Unexplained(request.url))

        def websocket(ws) -> None:
            def error(message: str) -> None:
                if any(t in message for t in TUNNEL_FAILED):
                    refusals.append(_Unexplained(ws.url))

            ws.on("socketerror", error)

        page.on("response", refused_response)
        page.on("requestfailed", refused_request)
        page.on("websocket", websocket)

        async def check(route) -> None:
            url = route.request.url
            try:
                await acheck_url(
                    url, allow_private=settings.NEWSROOM_ALLOW_PRIVATE_NETWORKS
                )
            except Refused as e:
                refusals.append(str(e))
                await route.abort("blockedbyclient")
                return
            await route.continue_()

        await page.route("**/*", check)

    async def new_kept_page(self, ws_url: str):
        """A page in a fresh context that survives this connection: (ctx, target, page)."""
        browser = await self.browser(ws_url)
        session = await browser.new_browser_cdp_session()
        try:
            context_id = (
                await session.send(
                    "Target.createBrowserContext", {"disposeOnDetach": False}
                )
            )["browserContextId"]
            default = browser.contexts[0]
            async with default.expect_page(
                timeout=settings.NEWSROOM_BROWSER_TIMEOUT * 1000
            ) as info:
                target_id = (
                    await session.send(
                        "Target.createTarget",
                        {"url": "about:blank", "browserContextId": context_id},
                    )
                )["targetId"]
            page = await info.value
        finally:
            await session.detach()
        # Another process opening a page at the same moment may have been the
        # page that appeared: check, and find ours by its target id if so.
        if await self._target_id(page) != target_id:
            self._pages.setdefault(await self._target_id(page), page)
            page = await self.page(ws_url, target_id, attempts=100)
        else:
            self._pages[target_id] = page
            await self._guard(page)
        return context_id, target_id, page

    async def dispose(self, ws_url: str, context_id: str) -> None:
        """Close a kept page by disposing its context (frees more than the page)."""
        session = await self._cdp(ws_url)
        try:
            await session.send(
                "Target.disposeBrowserContext", {"browserContextId": context_id}
            )
        except Exception as e:
            log.debug("disposing context %s: %s", context_id, e)
        finally:
            await session.detach()
        for tid, page in list(self._pages.items()):
            if page.is_closed():
                del self._pages[tid]
                self._guarded.discard(id(page))
                self._blocked.pop(id(page), None)

    async def context_cookies(self, ws_url: str, context_ids: list[str]) -> list[dict]:
        session = await self._cdp(ws_url)
        cookies: list[dict] = []
        try:
            for context_id in context_ids:
                try:
                    found = await session.send(
                        "Storage.getCookies", {"browserContextId": context_id}
                    )
                except Exception:
                    continue
                cookies.extend(found["cookies"])
        finally:
            await session.detach()
        return cookies

    # --- navigation and actions ---

    async def load(self, page, url: str, wait_for: str | None, timeout: float) -> None:
        ms = timeout * 1000
        try:
            response = await page.goto(url, wait_until="load", timeout=ms)
        except Exception as e:
            why = await self.take_refusals(page)
            if not why and any(t in str(e) for t in TUNNEL_FAILED):
                why = [await explain_egress_failure(url)]
            raise ActionFailed(
                why[0] if why else f"the page did not load: {_short(e)}"
            ) from None
        refused = response.headers.get(_REFUSED) if response is not None else None
        if refused:  # the egress proxy's own answer, for plain http
            await self.take_refusals(page)
            raise ActionFailed(refused)
        try:
            if wait_for:
                await page.wait_for_selector(wait_for, timeout=ms)
            else:
                # Network idle is best effort: some pages poll forever.
                await page.wait_for_load_state("networkidle", timeout=min(ms, 5000))
        except Exception as e:
            if wait_for:
                raise ActionFailed(
                    f"{wait_for!r} did not appear: {_short(e)}"
                ) from None

    async def take_refusals(self, page) -> list[str]:
        """The page's refusals since the last call, each said once."""
        refusals = self._blocked.get(id(page), [])
        taken = list(refusals)
        refusals.clear()
        said: dict[str, None] = {}
        for item in taken:
            if isinstance(item, _Unexplained):
                item = await explain_egress_failure(item.url)
            said[item] = None
        return list(said)

    async def _recheck(self, page) -> str | None:
        """Where the page ended up must pass the rule too: a redirect of the main
        document is not shown to routes, so a public page could forward the
        browser inside. A refused page is left for about:blank; the refusal."""
        url = page.url
        if not url.startswith(("http:", "https:")):
            return None
        try:
            await acheck_url(
                url, allow_private=settings.NEWSROOM_ALLOW_PRIVATE_NETWORKS
            )
        except Refused as e:
            self._blocked.setdefault(id(page), []).append(str(e))
            await page.goto("about:blank")
            return str(e)
        return None

    async def state(self, page, *, html: bool = False) -> PageState:
        await self._recheck(page)
        return PageState(
            url=page.url,
            title=await page.title(),
            html=await page.content() if html else "",
            blocked=await self.take_refusals(page),
        )

    async def act(
        self, page, action: str, params: dict[str, Any], timeout: float
    ) -> Any:
        ms = timeout * 1000
        try:
            if action == "click":
                if params.get("selector"):
                    await page.click(params["selector"], timeout=ms)
                else:
                    await page.mouse.click(float(params["x"]), float(params["y"]))
            elif action == "type":
                if params.get("selector"):
                    await page.fill(params["selector"], params["text"], timeout=ms)
                else:
                    await page.keyboard.type(params["text"])
            elif action == "press":
                await page.keyboard.press(params["key"])
            elif action == "scroll":
                await page.mouse.wheel(
                    float(params.get("dx", 0)), float(params.get("dy", 0))
                )
            elif action == "wait":
                await page.wait_for_selector(params["selector"], timeout=ms)
            elif action == "goto":
                await self.load(page, params["url"], params.get("wait_for"), timeout)
            elif action == "screenshot":
                return await page.screenshot(type="png", timeout=ms)
            elif action == "state":
                pass
            else:
                raise ActionFailed(f"unknown action {action!r}")
        except ActionFailed:
            raise
        except Exception as e:
            if page.is_closed():
                raise PageGone(action) from None
            raise ActionFailed(f"{action} failed: {_short(e)}") from None
        # Clicks may start a navigation; let it settle before reporting the URL.
        if action in ("click", "press"):
            try:
                await page.wait_for_load_state("load", timeout=min(ms, 5000))
            except Exception:
                pass
        return None

    async def render(
        self,
        ws_url: str,
        url: str,
        cookies: list[dict],
        wait_for: str | None,
        timeout: float,
    ) -> PageState:
        """Render `url` in a throwaway context carrying `cookies`; the DOM and final URL."""
        if self._render_slots is None:
            # One render at a time: the tab the capacity formula leaves free.
            self._render_slots = asyncio.Semaphore(1)
        async with self._render_slots:
            return await self._render(ws_url, url, cookies, wait_for, timeout)

    async def _render(
        self,
        ws_url: str,
        url: str,
        cookies: list[dict],
        wait_for: str | None,
        timeout: float,
    ) -> PageState:
        browser = await self.browser(ws_url)
        context = await browser.new_context(viewport={"width": 1280, "height": 800})
        try:
            if cookies:
                await context.add_cookies([_playwright_cookie(c) for c in cookies])
            page = await context.new_page()
            await self._guard(page)
            await self.load(page, url, wait_for, timeout)
            refused = await self._recheck(page)
            if refused:
                raise ActionFailed(refused)
            return await self.state(page, html=True)
        finally:
            for page in context.pages:
                self._guarded.discard(id(page))
                self._blocked.pop(id(page), None)
            await context.close()


def _playwright_cookie(c: dict) -> dict:
    cookie = {
        "name": c["name"],
        "value": c["value"],
        "domain": c["domain"],
        "path": c.get("path", "/"),
        "httpOnly": bool(c.get("httpOnly")),
        "secure": bool(c.get("secure")),
    }
    if not c.get("session") and c.get("expires", -1) > 0:
        cookie["expires"] = c["expires"]
    if c.get("sameSite") in ("Strict", "Lax", "None"):
        cookie["sameSite"] = c["sameSite"]
    return cookie


def png_data_url(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode()


_pool: Pool | None = None
_pool_lock = threading.Lock()


def get_pool() -> Pool:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = Pool()
        return _pool


class PoolUser:
    """The pool, a clock and a memory probe: what the session actions and the
    reaper both work with, each injectable so tests can fake time and memory."""

    def __init__(
        self,
        pool: Pool | None = None,
        clock: Callable[[], datetime] = timezone.now,
        available: Callable[[], int | None] | None = None,
    ) -> None:
        from sessions_app.browser import available_mb

        self.pool = pool or get_pool()
        self.clock = clock
        self.available = available or available_mb
