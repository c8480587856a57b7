"""Tools for the fault tests and `bench/faults.py`: real processes, killed for real.

- `Role`: a `manage.py` command (run_worker, fold_worker, serve) in its own
  process on the test database, killed with SIGKILL when the test says so.
- `CountingFeeds`: a local feed server that records when each path was asked
  for and when its answer was complete, so a test can tell what was fetched
  again after a crash and what the saved state must already hold.
- `OwnRedis`: a redis-server of the test's own on a free port (never the
  machine's shared one), so a test may stop and restart it.
- `FlakyProxy`: a TCP proxy between the processes and PostgreSQL that can
  refuse and drop connections for a while.
"""

from __future__ import annotations

import asyncio
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings

from newsroom.fetch.tests.server import LocalServer, Reply, Request, rss
from newsroom.live.testing import ROOT, free_port

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


def is_postgres() -> bool:
    return settings.DATABASES["default"]["ENGINE"].endswith("postgresql")


def database_url(port: int | None = None) -> str:
    """The test database as a DATABASE_URL (optionally through another port)."""
    db = settings.DATABASES["default"]
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    auth = db["USER"] + (f":{db['PASSWORD']}" if db.get("PASSWORD") else "")
    host = db["HOST"] or "127.0.0.1"
    return f"postgres://{auth}@{host}:{port or db['PORT'] or 5432}/{db['NAME']}"


def role_env(**extra: str) -> dict[str, str]:
    env = {
        "DATABASE_URL": database_url(),
        "SECRET_KEY": settings.SECRET_KEY,
        "NEWSROOM_ALLOW_PRIVATE_NETWORKS": "1",
        "LOG_LEVEL": "INFO",
        "PYTHONUNBUFFERED": "1",
    }
    if settings.REDIS_URL:
        env["REDIS_URL"] = settings.REDIS_URL
    env.update(extra)
    return env


class Role:
    """One `manage.py <command>` process. `kill()` is SIGKILL: no cleanup runs."""

    def __init__(
        self, command: list[str], env: dict[str, str], log: Path | None = None
    ) -> None:
        self.command = command
        self.env = {**os.environ, **env}
        self.log = log
        self.process: subprocess.Popen | None = None

    def start(self) -> Role:
        out: Any = open(self.log, "ab") if self.log else subprocess.DEVNULL
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", *self.command],
            cwd=ROOT,
            env=self.env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        return self

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> float:
        """SIGKILL; returns the moment it was sent (time.time())."""
        assert self.process is not None
        moment = time.time()
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)
        return moment

    def stop(self) -> None:
        if self.alive():
            assert self.process is not None
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)


def wait_for(predicate, timeout: float, what: str, every: float = 0.1):
    """Poll `predicate` (another process does the work) until truthy."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)  # waiting on another process, not on a clock
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


@dataclass
class Answer:
    path: str
    started: float  # when the server began to handle the request (time.time())
    # When the whole answer was written to a client still there to read it;
    # None while it is being answered, or when its client had died (a killed
    # process's last requests can still be read from the socket after it died).
    answered: float | None = None


class CountingFeeds:
    """`count` feeds at /feed/<i>, each answering after a short delay. Records
    an Answer for every request."""

    def __init__(self, count: int, *, delay: float = 0.1, seed: int = 0) -> None:
        self.server = LocalServer()
        self.delay = delay
        self.lock = threading.Lock()
        self.log: list[Answer] = []
        rng = random.Random(seed)
        self.bodies = {
            f"/feed/{i}": rss(rng.randint(1, 6), title=f"Feed {i}")
            for i in range(count)
        }
        for path in self.bodies:
            self.server.route(path, self._reply)

    def _reply(self, request: Request) -> Reply:
        answer = Answer(request.path, time.time())
        with self.lock:
            self.log.append(answer)

        def sent(delivered: bool) -> None:
            if delivered:
                answer.answered = time.time()

        return Reply(
            200,
            self.bodies[request.path],
            {"Content-Type": "application/rss+xml"},
            delay=self.delay,
            sent=sent,
        )

    def url(self, path: str) -> str:
        return self.server.url(path)

    def answers(self) -> list[Answer]:
        with self.lock:
            return list(self.log)

    def counts(self) -> Counter[str]:
        return Counter(a.path for a in self.answers())

    def requests_after(self, moment: float) -> Counter[str]:
        return Counter(a.path for a in self.answers() if a.started > moment)

    def answered_before(self, moment: float) -> set[str]:
        return {
            a.path
            for a in self.answers()
            if a.answered is not None and a.answered < moment
        }

    def close(self) -> None:
        self.server.close()


class OwnRedis:
    """A throwaway redis-server on a free port; stop() and start() at will."""

    def __init__(self) -> None:
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> OwnRedis:
        self.process = subprocess.Popen(
            [
                REDIS_SERVER,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for(self._answers, 10, "redis-server to listen")
        return self

    def _answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(5)
        self.process = None


class FlakyProxy:
    """A TCP proxy to `target`. While `refusing`, new connections are closed at
    once and `drop_all()` cuts the ones already open: what a PostgreSQL that
    restarts or refuses connections looks like to its clients."""

    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        self.target = (target_host, target_port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.refusing = False
        self.refused = 0
        self._pairs: set[tuple[socket.socket, socket.socket]] = set()
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.refusing:
                self.refused += 1
                client.close()
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            pair = (client, upstream)
            with self._lock:
                self._pairs.add(pair)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(
                    target=self._pipe, args=(a, b, pair), daemon=True
                ).start()

    def _pipe(self, src: socket.socket, dst: socket.socket, pair) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            self._close_pair(pair)

    def _close_pair(self, pair) -> None:
        with self._lock:
            self._pairs.discard(pair)
        for s in pair:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def drop_all(self) -> None:
        with self._lock:
            pairs = list(self._pairs)
        for pair in pairs:
            self._close_pair(pair)

    def refuse(self) -> None:
        """From now on refuse new connections, and cut the open ones."""
        self.refusing = True
        self.drop_all()

    def accept(self) -> None:
        self.refusing = False

    def outage(self, seconds: float) -> None:
        """Refuse and cut every connection for `seconds`, then accept again."""
        self.refuse()
        time.sleep(seconds)  # the outage itself: other processes must ride it out
        self.accept()

    def close(self) -> None:
        self._closed = True
        self.listener.close()
        self.drop_all()


# -- viewers ---------------------------------------------------------------------

ROW = re.compile(r'<li id="live-src-(\d+)-(\d+)" class="live-row is-([a-z_]+)"')
TOTALS = re.compile(
    r'<div id="live-totals-(\d+)" class="live-totals">(.*?)</div></div>'
)
STAT = re.compile(r'<div class="live-stat is-([a-z_]+)"><b>(\d+)</b>')
HEAD = re.compile(
    r'<div id="live-head-(\d+)" class="live-head">.*?badge state-([a-z_]+)"'
)


def expected_view(status: dict) -> dict:
    """What a run's live region must show at the end, from its saved status."""
    counts = Counter(s["state"] for s in status.get("sources", []))
    return {
        "rows": {s["id"]: s["state"] for s in status.get("sources", [])},
        "stats": {
            key: counts.get(key, 0)
            for key in ("ok", "not_modified", "error", "fetching", "queued")
        },
        "state": status.get("run_state", ""),
    }


class Viewer:
    """A viewer of a run's live region over a real WebSocket that behaves like
    live.js: acknowledges every frame, applies frames by element id, and when
    the socket drops reconnects with capped, jittered exponential backoff,
    asking for the whole region (no `have`), to the next server in its list
    (what a reverse proxy does when one backend dies)."""

    def __init__(
        self,
        servers: list[str],
        path: str,
        cookie: str,
        *,
        seed: int = 0,
        eager: bool = True,
    ) -> None:
        self.eager = eager
        self._backlog: list[str] = []
        self.servers = servers  # "127.0.0.1:port"
        self.path = path
        self.cookie = cookie
        self.rng = random.Random(seed)
        self.index = seed % len(servers)
        self.rows: dict[int, str] = {}
        self.stats: dict[str, int] = {}
        self.state = ""
        self.frames = 0
        self.full_frames = 0
        self.reconnects = 0
        self.first_after_reconnect: list[bool] = []  # was it the whole region?
        self.latencies: list[float] = []
        self.last_frame_at = 0.0
        self.frame_times: list[float] = []
        self.stopped = False
        self.client = None
        self.on_frame = None  # optional callback(viewer, received_at, text)

    def view(self) -> dict:
        self._apply_backlog()
        return {"rows": dict(self.rows), "stats": dict(self.stats), "state": self.state}

    def _apply_backlog(self) -> None:
        backlog, self._backlog = self._backlog, []
        for text in backlog:
            self._apply_now(text)

    def apply(self, text: str) -> None:
        if self.eager:
            self._apply_now(text)
            return
        # Lazy viewers (the load benchmark's crowd) keep the frames since the
        # last whole region and read them when asked: the client process must
        # not be the bottleneck it measures.
        if " full" in text[:40]:
            self.full_frames += 1
            self._backlog = []
        self._backlog.append(text)

    def _apply_now(self, text: str) -> None:
        head = text.split("-->", 1)[0]
        if " full" in head:
            if self.eager:
                self.full_frames += 1
            self.rows = {}
        for _run, sid, state in ROW.findall(text):
            self.rows[int(sid)] = state
        for _run, body in TOTALS.findall(text):
            self.stats = {k: int(v) for k, v in STAT.findall(body)}
        for _run, state in HEAD.findall(text):
            self.state = state

    async def run(self, connect_timeout: float = 10.0) -> None:
        from newsroom.live.testing import WsClient

        attempt = 0
        reconnecting = False
        while not self.stopped:
            server = self.servers[self.index % len(self.servers)]
            client = WsClient(
                f"ws://{server}{self.path}",
                cookie=self.cookie,
                origin=f"http://{server}",
            )
            try:
                await client.connect(timeout=connect_timeout)
            except (OSError, ConnectionError, TimeoutError, asyncio.TimeoutError):
                attempt += 1
                self.index += 1
                # Full jitter, capped: a crowd of viewers does not come back at once.
                await asyncio.sleep(self.rng.uniform(0, min(5.0, 0.25 * 2**attempt)))
                continue
            self.client = client
            first = True
            while True:
                at, frame = await client.messages.get()
                if frame is None:
                    break
                if first and reconnecting:
                    self.first_after_reconnect.append(" full" in frame[:40])
                first = False
                attempt = 0
                self.frames += 1
                self.frame_times.append(at)
                client.ack(frame)
                self.apply(frame)
                if self.on_frame is not None:
                    self.on_frame(self, at, frame)
            if self.stopped or client.close_code == 4401:
                return
            self.reconnects += 1
            reconnecting = True
            attempt += 1
            self.index += 1
            await asyncio.sleep(self.rng.uniform(0, min(5.0, 0.25 * 2**attempt)))

    def stop(self) -> None:
        self.stopped = True
        if self.client is not None:
            self.client.close()


def session_cookie(user) -> str:
    from django.test import Client

    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}"
