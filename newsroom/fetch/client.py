"""fetch(): one URL, safely, with every refusal as a FetchError in plain words."""

from __future__ import annotations

import asyncio
import concurrent.futures
import ssl
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from http import HTTPStatus
from urllib.parse import urljoin, urlsplit

import httpx

from newsroom.fetch.decode import (
    ACCEPT_ENCODING,
    BodyTooLarge,
    CappedDecoder,
    CorruptBody,
    UnsupportedEncoding,
    decode_text,
    detect_charset,
)
from newsroom.fetch.network import (
    BlockedAddress,
    ResolveError,
    Resolver,
    SafeClient,
    make_client,
)

MAX_REDIRECTS = 10
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


class FetchError(Exception):
    """A fetch failed or was refused. str() is the plain-words error for the reader.

    `status` is the HTTP status when the server answered; `retry_after` the
    moment (aware UTC datetime) the server asked us to wait until, if it did."""

    def __init__(
        self,
        message: str,
        *,
        url: str = "",
        status: int | None = None,
        retry_after: datetime | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.url = url
        self.status = status
        self.retry_after = retry_after


@dataclass
class FetchResult:
    url: str  # final URL, after redirects
    status: int  # 200..299, or 304 when not modified
    headers: httpx.Headers
    body: bytes  # decompressed, at most the cap; empty when not modified
    content_type: str  # the media type, lower case, without parameters
    charset: str | None  # from the header, a BOM or the XML/HTML declaration
    elapsed_ms: int
    redirects: list[str] = field(default_factory=list)  # URLs that redirected
    charset_note: str = ""  # why a declared charset was ignored, if one was

    @property
    def not_modified(self) -> bool:
        return self.status == 304

    @property
    def etag(self) -> str:
        return self.headers.get("etag", "")

    @property
    def last_modified(self) -> str:
        return self.headers.get("last-modified", "")

    @property
    def raw_content_type(self) -> str:
        return self.headers.get("content-type", "")

    def text(self) -> str:
        return decode_text(self.body, self.charset)


def _settings():
    from django.conf import settings

    return settings


def _seconds(value: float) -> str:
    return f"{value:g} s"


def _size(n: int) -> str:
    if n % (1024 * 1024) == 0:
        return f"{n // (1024 * 1024)} MiB"
    if n >= 1024 * 1024:
        return f"{n / (1024 * 1024):.1f} MiB"
    return f"{n // 1024} KiB" if n % 1024 == 0 else f"{n} bytes"


def parse_retry_after(
    value: str | None, now: datetime | None = None
) -> datetime | None:
    """The moment a Retry-After header (seconds or an HTTP date) points to."""
    if not value:
        return None
    now = now or datetime.now(UTC)
    value = value.strip()
    if value.isdigit():
        # Cap absurd values: a day is the longest backoff anyway.
        return now + timedelta(seconds=min(int(value), 86400))
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return min(max(when, now), now + timedelta(days=1))


def _check_url(url: str) -> httpx.URL:
    try:
        scheme = urlsplit(url).scheme.lower()
    except ValueError:
        raise FetchError(f"not a valid URL: {url!r}", url=url) from None
    if scheme not in ("http", "https"):
        raise FetchError(
            "only http and https URLs can be fetched"
            + (f" (this one is {scheme}:)" if scheme else ""),
            url=url,
        )
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, ValueError) as e:
        raise FetchError(f"not a valid URL: {e}", url=url) from None
    if not parsed.host:
        raise FetchError("the URL has no host name", url=url)
    return parsed


def _http_error(response: httpx.Response, url: str) -> FetchError:
    try:
        phrase = HTTPStatus(response.status_code).phrase
    except ValueError:
        phrase = response.reason_phrase or "error"
    message = f"HTTP {response.status_code} {phrase}"
    if response.status_code == 410:
        message += ": the server says this URL is gone for good"
    retry_after = None
    if response.status_code in (429, 503):
        retry_after = parse_retry_after(response.headers.get("retry-after"))
        if retry_after is not None:
            message += f"; asked to retry after {retry_after:%Y-%m-%d %H:%M:%S} UTC"
    return FetchError(
        message, url=url, status=response.status_code, retry_after=retry_after
    )


async def _read_body(response: httpx.Response, max_bytes: int, url: str) -> bytes:
    try:
        decoder = CappedDecoder(response.headers.get("content-encoding", ""), max_bytes)
    except UnsupportedEncoding as e:
        raise FetchError(str(e), url=url, status=response.status_code) from None
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and not response.headers.get("content-encoding"):
        if int(declared) > max_bytes:
            # Refuse before reading a byte of it.
            raise FetchError(f"body larger than {_size(max_bytes)}", url=url)
    parts: list[bytes] = []
    try:
        async for chunk in response.aiter_raw():
            parts.append(decoder.feed(chunk))
        parts.append(decoder.flush())
    except BodyTooLarge:
        raise FetchError(f"body larger than {_size(max_bytes)}", url=url) from None
    except CorruptBody as e:
        raise FetchError(str(e), url=url) from None
    return b"".join(parts)


async def _fetch(
    url: str,
    *,
    client: SafeClient,
    etag: str | None,
    last_modified: str | None,
    max_bytes: int,
    started: float,
    connect_timeout: float,
    read_timeout: float,
) -> FetchResult:
    headers = {"Accept-Encoding": ACCEPT_ENCODING}
    if etag:
        headers["If-None-Match"] = etag
    if last_modified:
        headers["If-Modified-Since"] = last_modified
    timeout = httpx.Timeout(
        connect=connect_timeout, read=read_timeout, write=read_timeout, pool=None
    )
    visited: list[str] = []
    current = url
    while True:
        target = _check_url(current)
        try:
            async with client.stream(
                "GET", target, headers=headers, timeout=timeout
            ) as response:
                if (
                    response.status_code in REDIRECT_STATUSES
                    and "location" in response.headers
                ):
                    visited.append(current)
                    current = urljoin(str(response.url), response.headers["location"])
                    if len(visited) > MAX_REDIRECTS:
                        loop = " (a redirect loop)" if current in visited else ""
                        raise FetchError(
                            f"too many redirects ({len(visited)}){loop}", url=current
                        )
                    continue
                if response.status_code == 304:
                    body = b""
                elif 200 <= response.status_code < 300:
                    body = await _read_body(response, max_bytes, current)
                else:
                    raise _http_error(response, current)
        except (BlockedAddress, ResolveError) as e:
            raise FetchError(str(e), url=current) from None
        except httpx.HTTPError as e:
            error = _network_error(
                e, target.host, connect_timeout, read_timeout, current
            )
            raise error from None
        content_type_header = response.headers.get("content-type", "")
        charset, note = detect_charset(content_type_header, body)
        return FetchResult(
            url=current,
            status=response.status_code,
            headers=response.headers,
            body=body,
            content_type=content_type_header.split(";")[0].strip().lower(),
            charset=charset,
            elapsed_ms=int((time.monotonic() - started) * 1000),
            redirects=visited,
            charset_note=note,
        )


def _network_error(
    error: httpx.HTTPError,
    host: str,
    connect_timeout: float,
    read_timeout: float,
    url: str,
) -> FetchError:
    """httpx's exception for a failed exchange, as words for the reader."""
    if isinstance(error, httpx.ConnectTimeout):
        message = f"could not connect to {host} within {_seconds(connect_timeout)}"
    elif isinstance(error, httpx.ReadTimeout):
        message = f"the server sent nothing for {_seconds(read_timeout)}"
    elif isinstance(error, httpx.TimeoutException):
        message = "timed out"
    elif isinstance(error, httpx.ConnectError):
        tls = _tls_problem(error)
        if tls:
            message = f"the TLS certificate of {host} is not valid ({tls})"
        else:
            message = f"could not connect to {host} ({_reason(error)})"
    elif isinstance(error, httpx.RemoteProtocolError):
        message = f"the server broke the HTTP protocol ({_reason(error)})"
    else:
        message = f"network error: {_reason(error)}"
    return FetchError(message, url=url)


def _tls_problem(error: BaseException) -> str:
    """The certificate check's own words, if a TLS verification failed."""
    seen = 0
    while error is not None and seen < 10:
        if isinstance(error, ssl.SSLCertVerificationError):
            return (error.verify_message or str(error)).rstrip(".")
        error = error.__cause__ or error.__context__
        seen += 1
    return ""


def _reason(error: Exception) -> str:
    text = str(error).strip()
    return text or type(error).__name__


async def fetch(
    url: str,
    *,
    etag: str | None = None,
    last_modified: str | None = None,
    client: SafeClient | None = None,
    timeout: float | None = None,
    connect_timeout: float | None = None,
    read_timeout: float | None = None,
    max_bytes: int | None = None,
    allow_private: bool | None = None,
    resolver: Resolver | None = None,
) -> FetchResult:
    """GET `url` safely and return its (decompressed, capped) body.

    Redirects are followed by hand, at most 10, each hop re-checked. With an
    ETag or Last-Modified the request is conditional; a 304 comes back as a
    result with `not_modified` set and an empty body. Anything else that is not
    a 2xx raises FetchError. Limits default to the Django settings. A `client`
    must come from `make_client` (it carries the address checks); without one
    a client is made for this call (`allow_private`, `resolver` apply to it)."""
    if client is not None and not isinstance(client, SafeClient):
        raise TypeError("fetch() needs a client from newsroom.fetch.make_client()")
    if (
        timeout is None
        or max_bytes is None
        or connect_timeout is None
        or read_timeout is None
    ):
        settings = _settings()
        timeout = timeout or settings.NEWSROOM_FETCH_TIMEOUT
        max_bytes = max_bytes or settings.NEWSROOM_FETCH_MAX_BYTES
        connect_timeout = connect_timeout or settings.NEWSROOM_FETCH_CONNECT_TIMEOUT
        read_timeout = read_timeout or settings.NEWSROOM_FETCH_READ_TIMEOUT
    own = client is None
    if own:
        client = make_client(
            allow_private=allow_private, resolver=resolver, max_connections=4
        )
    started = time.monotonic()
    try:
        async with asyncio.timeout(timeout):
            return await _fetch(
                url,
                client=client,
                etag=etag,
                last_modified=last_modified,
                max_bytes=max_bytes,
                started=started,
                connect_timeout=min(connect_timeout, timeout),
                read_timeout=min(read_timeout, timeout),
            )
    except TimeoutError:
        raise FetchError(f"timed out after {_seconds(timeout)}", url=url) from None
    finally:
        if own:
            await client.aclose()


def fetch_sync(url: str, **kw) -> FetchResult:
    """fetch() for synchronous code (views, commands). Runs its own event loop,
    in a helper thread if this thread already runs one."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(fetch(url, **kw))
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, fetch(url, **kw)).result()
