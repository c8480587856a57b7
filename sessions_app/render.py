"""The renderer for browser-kind sources (newsroom.runs.kinds contract)."""

from __future__ import annotations

from urllib.parse import urlsplit

from asgiref.sync import sync_to_async
from django.conf import settings

from newsroom.runs.kinds import RenderedPage, RenderError
from sessions_app import browser as host_mod
from sessions_app.models import BrowserSession
from sessions_app.netrule import Refused, check_url
from sessions_app.pool import ActionFailed, get_pool


def _cookie_matches(domain: str, host: str) -> bool:
    domain = domain.lstrip(".").lower()
    return host == domain or host.endswith("." + domain)


def _prepare(source) -> tuple[str, list[str]]:
    """The browser's endpoint and the contexts of the reader's open sessions."""
    try:
        check_url(source.url)
    except Refused as e:
        raise RenderError(str(e)) from None
    try:
        host = host_mod.ensure_browser()
    except host_mod.BrowserUnavailable as e:
        raise RenderError(str(e)) from None
    contexts = list(
        BrowserSession.objects.filter(
            owner_id=source.reader_id, state=BrowserSession.State.OPEN, tag=host.tag
        )
        .exclude(context_id="")
        .values_list("context_id", flat=True)
    )
    return host.ws_url, contexts


async def render(source) -> RenderedPage:
    """Render the source's URL in Chromium: the DOM after the network went idle,
    with the reader's session cookies for that site when a session holds any."""
    ws_url, contexts = await sync_to_async(_prepare)(source)
    pool = get_pool()
    host = (urlsplit(source.url).hostname or "").lower()
    try:
        cookies = []
        if contexts:
            found = await pool.arun(pool.context_cookies(ws_url, contexts))
            cookies = [c for c in found if _cookie_matches(c.get("domain", ""), host)]
        state = await pool.arun(
            pool.render(
                ws_url, source.url, cookies, None, settings.NEWSROOM_BROWSER_TIMEOUT
            )
        )
    except (ActionFailed, Refused) as e:
        raise RenderError(str(e)) from None
    except Exception as e:
        raise RenderError(f"the browser could not render the page: {e}") from None
    return RenderedPage(url=state.url, html=state.html)
