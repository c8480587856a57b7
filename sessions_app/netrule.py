"""The private-network rule for everything the browser loads.

One function decides (`check_url`, or `acheck_url` on the browser's loop); the
page guard and the action views both go through it, and it judges addresses with
the egress proxy's `verdict` (the safe fetcher's rule, newsroom.fetch.addresses),
so pages, the proxy and fetches refuse the same addresses.
"""

from __future__ import annotations

import asyncio
import socket
from urllib.parse import urlsplit

from django.conf import settings

from sessions_app.egress import verdict


class Refused(Exception):
    """The URL may not be loaded; str() says why in plain words."""


def _split(url: str) -> tuple[str, str, int]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise Refused(
            f"only http and https pages can be opened, not {scheme or 'this'}: {url}"
        )
    if not parts.hostname:
        raise Refused(f"the address has no host name: {url}")
    port = parts.port or (443 if scheme == "https" else 80)
    return scheme, parts.hostname, port


def _verdict(host: str, addresses: list[str]) -> None:
    if not addresses:
        raise Refused(f"{host} does not resolve to any address")
    why = verdict(host, addresses)  # the egress proxy's own rule
    if why:
        raise Refused(
            f"{why}; Newsroom does not open pages on private networks "
            "(NEWSROOM_ALLOW_PRIVATE_NETWORKS=1 allows it)"
        )


def private_allowed() -> bool:
    return bool(settings.NEWSROOM_ALLOW_PRIVATE_NETWORKS)


def check_url(url: str, *, allow_private: bool | None = None) -> None:
    """Raise Refused unless `url` may be loaded. Resolves the host (blocking)."""
    _, host, port = _split(url)
    if private_allowed() if allow_private is None else allow_private:
        return
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as e:
        raise Refused(f"{host} cannot be resolved: {e}") from None
    _verdict(host, sorted({info[4][0] for info in infos}))


async def acheck_url(url: str, *, allow_private: bool) -> None:
    """check_url for the browser's event loop (resolution does not block it)."""
    if url.startswith(("data:", "blob:", "about:")):
        return
    _, host, port = _split(url)
    if allow_private:
        return
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(
            host, port, type=socket.SOCK_STREAM
        )
    except (socket.gaierror, UnicodeError) as e:
        raise Refused(f"{host} cannot be resolved: {e}") from None
    _verdict(host, sorted({info[4][0] for info in infos}))


async def explain_egress_failure(url: str) -> str:
    """Why the browser's egress proxy did not carry `url`, in this rule's words.

    The proxy answers Chromium, which keeps only "tunnel failed": the host is
    resolved again here to say why (the proxy's own decision stands either way)."""
    http_url = "http" + url[2:] if url.startswith(("ws:", "wss:")) else url
    try:
        await acheck_url(http_url, allow_private=False)
    except Refused as e:
        return f"the browser's egress proxy refused it: {e}"
    return (
        f"{url} could not be reached through the browser's egress proxy "
        "(it refuses addresses that are not public; this one may have answered "
        "differently to the proxy, or not at all)"
    )
