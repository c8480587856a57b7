"""The safe fetcher against a local server: every bad input is a FetchError in plain words."""

from __future__ import annotations

import gzip

import pytest

from newsroom.fetch import FetchError, fetch, fetch_sync, make_client
from newsroom.fetch.tests.server import Reply, client_trusting, gzip_bomb, rss

MiB = 1024 * 1024
# The local server is on loopback: allow it explicitly, except in the tests of blocking.
OPEN = {"allow_private": True}


async def _error(url: str, **kw) -> FetchError:
    with pytest.raises(FetchError) as info:
        await fetch(url, **kw)
    return info.value


async def test_it_fetches_a_feed_with_its_headers(server):
    url = server.route(
        "/feed",
        Reply(
            body=rss(), headers={"Content-Type": "application/rss+xml; charset=utf-8"}
        ),
    )
    result = await fetch(url, **OPEN)
    assert result.status == 200
    assert result.body == rss()
    assert result.content_type == "application/rss+xml"
    assert result.charset == "utf-8"
    assert result.url == url
    assert result.elapsed_ms >= 0
    sent = server.requests[-1].headers
    assert sent["user-agent"].startswith("Newsroom/")
    assert "gzip" in sent["accept-encoding"]


async def test_conditional_get_returns_not_modified(server):
    def route(request):
        if request.headers.get("if-none-match") == '"v1"':
            return Reply(304, headers={"ETag": '"v1"'})
        return Reply(
            body=rss(),
            headers={"ETag": '"v1"', "Last-Modified": "Mon, 01 Jun 2026 00:00:00 GMT"},
        )

    url = server.route("/feed", route)
    first = await fetch(url, **OPEN)
    assert first.etag == '"v1"' and first.last_modified.startswith("Mon")
    second = await fetch(
        url, etag=first.etag, last_modified=first.last_modified, **OPEN
    )
    assert second.not_modified and second.body == b""
    assert server.requests[-1].headers["if-modified-since"] == first.last_modified


async def test_gzip_body_is_decompressed(server):
    url = server.route(
        "/gz", Reply(body=gzip.compress(rss(50)), headers={"Content-Encoding": "gzip"})
    )
    assert (await fetch(url, **OPEN)).body == rss(50)


@pytest.mark.parametrize(
    "status,words",
    [
        (404, "HTTP 404 Not Found"),
        (410, "HTTP 410 Gone: the server says this URL is gone for good"),
        (500, "HTTP 500 Internal Server Error"),
        (502, "HTTP 502 Bad Gateway"),
    ],
)
async def test_http_errors_are_plain_words(server, status, words):
    url = server.route("/x", Reply(status, b"nope"))
    error = await _error(url, **OPEN)
    assert str(error) == words
    assert error.status == status


async def test_429_records_retry_after(server):
    url = server.route(
        "/busy", Reply(429, b"slow down", headers={"Retry-After": "120"})
    )
    error = await _error(url, **OPEN)
    assert str(error).startswith("HTTP 429 Too Many Requests; asked to retry after")
    assert error.retry_after is not None


async def test_503_with_http_date_retry_after(server):
    url = server.route(
        "/down", Reply(503, headers={"Retry-After": "Wed, 21 Oct 2099 07:28:00 GMT"})
    )
    error = await _error(url, **OPEN)
    assert error.status == 503 and error.retry_after is not None


async def test_a_server_that_never_answers_times_out(server):
    url = server.route("/slow", Reply(body=b"late", delay=1.0))
    error = await _error(url, timeout=0.3, **OPEN)
    assert str(error) == "timed out after 0.3 s"


async def test_a_body_that_trickles_hits_the_total_timeout(server):
    # Each chunk arrives well within the read timeout; only the total limit stops it.
    url = server.route(
        "/trickle", Reply(body=(b"x" for _ in range(100)), chunk_delay=0.05)
    )
    error = await _error(url, timeout=0.4, read_timeout=5, **OPEN)
    assert str(error) == "timed out after 0.4 s"


async def test_a_stalled_body_hits_the_read_timeout(server):
    url = server.route("/stall", Reply(body=iter([b"a", b"b"]), chunk_delay=0.6))
    error = await _error(url, timeout=5, read_timeout=0.2, **OPEN)
    assert str(error) == "the server sent nothing for 0.2 s"


async def test_redirects_are_followed_by_hand(server):
    final = server.route("/final", Reply(body=b"here"))
    server.route("/hop2", Reply(302, headers={"Location": "/final"}))
    start = server.route("/hop1", Reply(301, headers={"Location": server.url("/hop2")}))
    result = await fetch(start, **OPEN)
    assert result.url == final and result.body == b"here"
    assert result.redirects == [start, server.url("/hop2")]


async def test_a_redirect_loop_stops_after_ten(server):
    server.route("/a", Reply(302, headers={"Location": "/b"}))
    url = server.route("/b", Reply(302, headers={"Location": "/a"}))
    error = await _error(url, **OPEN)
    assert str(error) == "too many redirects (11) (a redirect loop)"


async def test_a_redirect_to_loopback_is_blocked_when_private_networks_are_off(server):
    async def resolver(host, port):
        return ["127.0.0.1"]

    server.route("/go", Reply(302, headers={"Location": server.url("/secret")}))
    server.route("/secret", Reply(body=b"internal"))
    client = client_trusting({"feeds.example"}, resolver)
    try:
        error = await _error(f"http://feeds.example:{server.port}/go", client=client)
    finally:
        await client.aclose()
    assert str(error) == "blocked: 127.0.0.1 is a loopback address"
    assert [r.path for r in server.requests] == ["/go"]  # /secret was never reached


async def test_a_redirect_to_loopback_is_followed_when_private_networks_are_on(server):
    server.route("/go", Reply(302, headers={"Location": server.url("/secret")}))
    server.route("/secret", Reply(body=b"internal"))
    assert (await fetch(server.url("/go"), **OPEN)).body == b"internal"


async def test_each_redirect_hop_is_rechecked(server):
    seen = []

    async def resolver(host, port):
        seen.append(host)
        return {"feeds.example": ["127.0.0.1"], "inside.example": ["10.0.0.5"]}[host]

    server.route(
        "/r", Reply(302, headers={"Location": f"http://inside.example:{server.port}/x"})
    )
    client = client_trusting({"feeds.example"}, resolver)
    try:
        error = await _error(f"http://feeds.example:{server.port}/r", client=client)
    finally:
        await client.aclose()
    assert (
        str(error) == "blocked: inside.example resolves to 10.0.0.5, a private address"
    )
    assert seen == ["feeds.example", "inside.example"]


async def test_a_hostname_resolving_to_a_private_address_is_blocked():
    async def resolver(host, port):
        return ["10.0.0.5"]

    error = await _error(
        "http://example.test/feed", allow_private=False, resolver=resolver
    )
    assert str(error) == "blocked: example.test resolves to 10.0.0.5, a private address"


async def test_every_resolved_address_is_checked():
    async def resolver(host, port):
        return ["93.184.216.34", "169.254.169.254"]

    error = await _error("http://mixed.test/", allow_private=False, resolver=resolver)
    assert "169.254.169.254, a link-local address" in str(error)


async def test_the_checked_address_is_the_one_connected_to(server):
    # DNS rebinding: a resolver that answers differently each time. The fetch
    # connects to the address it checked, keeping the Host header.
    answers = iter([["127.0.0.1"], ["10.9.9.9"]])

    async def resolver(host, port):
        return next(answers)

    url = server.route("/pinned", Reply(body=b"pinned"))
    result = await fetch(
        f"http://rebind.example:{server.port}/pinned",
        allow_private=True,
        resolver=resolver,
    )
    assert result.body == b"pinned" and url.endswith("/pinned")
    assert server.requests[-1].headers["host"] == f"rebind.example:{server.port}"


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "ftp://example.org/feed",
        "gopher://example.org/",
        "javascript:alert(1)",
        "data:text/plain,hi",
    ],
)
async def test_other_schemes_are_refused(url):
    error = await _error(url)
    assert str(error).startswith("only http and https URLs can be fetched")


async def test_a_redirect_to_a_file_url_is_refused(server):
    url = server.route(
        "/tofile", Reply(302, headers={"Location": "file:///etc/passwd"})
    )
    error = await _error(url, **OPEN)
    assert str(error).startswith("only http and https URLs can be fetched")


async def test_environment_proxies_are_ignored(server, monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", "http://10.255.255.1:3128")
    monkeypatch.setenv("ALL_PROXY", "http://10.255.255.1:3128")
    url = server.route("/direct", Reply(body=b"direct"))
    assert (await fetch(url, **OPEN)).body == b"direct"


async def test_a_16_mib_body_is_refused(server):
    url = server.route("/big", Reply(body=b"x" * (16 * MiB)))
    error = await _error(url, **OPEN)
    assert str(error) == "body larger than 15 MiB"


async def test_a_16_mib_chunked_body_is_refused(server):
    url = server.route("/bigchunks", Reply(body=(b"y" * MiB for _ in range(16))))
    error = await _error(url, **OPEN)
    assert str(error) == "body larger than 15 MiB"


async def test_a_gzip_bomb_is_refused_at_the_cap(server):
    bomb = gzip_bomb(64 * MiB)
    assert len(bomb) < MiB // 4
    url = server.route("/bomb", Reply(body=bomb, headers={"Content-Encoding": "gzip"}))
    error = await _error(url, **OPEN)
    assert str(error) == "body larger than 15 MiB"


async def test_an_unknown_content_encoding_is_named(server):
    url = server.route(
        "/enc", Reply(body=b"??", headers={"Content-Encoding": "compress"})
    )
    error = await _error(url, **OPEN)
    assert "'compress'" in str(error)


async def test_charsets_from_header_bom_and_declaration(server):
    latin = "<rss><title>Café</title></rss>".encode("latin-1")
    a = server.route(
        "/h", Reply(body=latin, headers={"Content-Type": "text/xml; charset=latin-1"})
    )
    b = server.route(
        "/x", Reply(body=b'<?xml version="1.0" encoding="ISO-8859-1"?>' + latin)
    )
    c = server.route("/bom", Reply(body="<rss>Café</rss>".encode("utf-16")))
    d = server.route(
        "/none", Reply(body=b"<rss/>", headers={"Content-Type": "application/rss+xml"})
    )
    e = server.route(
        "/wrong",
        Reply(body=latin, headers={"Content-Type": "text/xml; charset=klingon"}),
    )
    assert (await fetch(a, **OPEN)).text().endswith("Café</title></rss>")
    assert (await fetch(b, **OPEN)).charset == "iso8859-1"
    assert (await fetch(c, **OPEN)).text() == "<rss>Café</rss>"
    assert (await fetch(d, **OPEN)).charset is None
    wrong = await fetch(e, **OPEN)
    assert wrong.charset is None and "unknown charset 'klingon'" in wrong.charset_note
    assert "Caf\ufffd" in wrong.text()


async def test_an_empty_body_is_returned_as_empty(server):
    # Whether empty is an error depends on the source kind: the run decides.
    url = server.route("/empty", Reply(body=b""))
    result = await fetch(url, **OPEN)
    assert result.status == 200 and result.body == b""


async def test_connection_refused_is_plain_words(server):
    port = server.port
    server.close()
    error = await _error(f"http://127.0.0.1:{port}/", **OPEN)
    assert str(error).startswith("could not connect to 127.0.0.1")


async def test_unresolvable_host_is_plain_words():
    async def resolver(host, port):
        from newsroom.fetch.network import ResolveError

        raise ResolveError(f"cannot resolve {host} (Name or service not known)")

    error = await _error("http://nowhere.invalid/", resolver=resolver)
    assert str(error) == "cannot resolve nowhere.invalid (Name or service not known)"


def test_fetch_sync_works_from_synchronous_code(server):
    url = server.route("/sync", Reply(body=b"sync"))
    assert fetch_sync(url, **OPEN).body == b"sync"


async def test_fetch_sync_works_inside_a_running_loop(server):
    url = server.route("/sync2", Reply(body=b"sync2"))
    assert fetch_sync(url, **OPEN).body == b"sync2"


async def test_a_foreign_client_is_refused():
    import httpx

    async with httpx.AsyncClient() as client:
        with pytest.raises(TypeError):
            await fetch("http://example.org/", client=client)


async def test_a_shared_client_reuses_connections_within_its_limit(server):
    import asyncio

    url = server.route("/keep", Reply(body=b"alive", delay=0.01))
    client = make_client(allow_private=True, max_connections=4)
    try:
        results = await asyncio.gather(*(fetch(url, client=client) for _ in range(40)))
    finally:
        await client.aclose()
    assert all(r.body == b"alive" for r in results)
    ports = {r.client_port for r in server.requests}
    assert 1 <= len(ports) <= 4  # 40 requests over at most 4 kept-alive connections


async def test_https_to_a_pinned_address_still_checks_the_certificate_name():
    # The connection goes to the checked IP (127.0.0.1), but TLS is negotiated
    # for the host name: SNI and the certificate check use "feeds.test".
    from newsroom.fetch.tests.server import LocalServer, tls_contexts

    server_tls, client_tls = tls_contexts("feeds.test")
    server = LocalServer(tls=server_tls)
    server.route("/secure", Reply(body=b"secure"))

    async def resolver(host, port):
        return ["127.0.0.1"]

    client = make_client(allow_private=True, resolver=resolver, verify=client_tls)
    try:
        result = await fetch(f"https://feeds.test:{server.port}/secure", client=client)
        assert result.body == b"secure"
        assert server.requests[-1].headers["host"] == f"feeds.test:{server.port}"
        # Another name pinned to the same address does not pass the check.
        error = await _error(f"https://other.test:{server.port}/secure", client=client)
        assert str(error) == (
            "the TLS certificate of other.test is not valid (Hostname mismatch, "
            "certificate is not valid for 'other.test')"
        )
    finally:
        await client.aclose()
        server.close()
