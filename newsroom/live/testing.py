"""Helpers for end-to-end tests and the benchmark: a real WebSocket client and a
real server process.

`WsClient` is a small asyncio WebSocket client. `ServerProcess` starts `manage.py serve` on 127.0.0.1 with the given
environment and waits until it answers.
"""

from __future__ import annotations

import asyncio
import base64
import os
import re
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FRAME_SEQ = re.compile(r"<!--live (\d+)")


class WsClient:
    """A minimal RFC 6455 client (text frames, ping/pong, close codes).

    Written here because the one WebSocket library installed (autobahn) is bound
    to Twisted in any process that has loaded daphne. Frames arrive in `messages`
    as (time received, text); None marks the close, whose code is `close_code`.
    """

    def __init__(self, url: str, *, cookie: str = "", origin: str = "") -> None:
        match = re.match(r"ws://([^:/]+):(\d+)(/.*)$", url)
        if not match:
            raise ValueError(f"not a ws:// URL with a port: {url}")
        self.host, self.port, self.path = (
            match.group(1),
            int(match.group(2)),
            match.group(3),
        )
        self.cookie = cookie
        self.origin = origin
        self.messages: asyncio.Queue[tuple[float, str | None]] = asyncio.Queue()
        self.close_code: int | None = None
        self.status = 0
        self.received = 0
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._task: asyncio.Task | None = None

    async def connect(self, timeout: float = 10.0) -> WsClient:
        await asyncio.wait_for(self._handshake(), timeout)
        if self.status != 101:
            raise ConnectionError(f"handshake refused: HTTP {self.status}")
        self._task = asyncio.get_running_loop().create_task(self._read_loop())
        return self

    async def _handshake(self) -> None:
        self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
        key = base64.b64encode(os.urandom(16)).decode()
        lines = [
            f"GET {self.path} HTTP/1.1",
            f"Host: {self.host}:{self.port}",
            "Upgrade: websocket",
            "Connection: Upgrade",
            f"Sec-WebSocket-Key: {key}",
            "Sec-WebSocket-Version: 13",
        ]
        if self.origin:
            lines.append(f"Origin: {self.origin}")
        if self.cookie:
            lines.append(f"Cookie: {self.cookie}")
        self._writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        status = await self._reader.readline()
        self.status = int(status.split()[1])
        while (await self._reader.readline()) not in (b"\r\n", b""):
            pass

    async def _read_loop(self) -> None:
        assert self._reader is not None
        reader = self._reader
        parts: list[bytes] = []
        try:
            while True:
                head = await reader.readexactly(2)
                fin, opcode, length = head[0] & 0x80, head[0] & 0x0F, head[1] & 0x7F
                if length == 126:
                    length = struct.unpack("!H", await reader.readexactly(2))[0]
                elif length == 127:
                    length = struct.unpack("!Q", await reader.readexactly(8))[0]
                payload = await reader.readexactly(length)
                if opcode == 8:
                    self.close_code = (
                        struct.unpack("!H", payload[:2])[0]
                        if len(payload) >= 2
                        else 1005
                    )
                    self._send_frame(8, payload[:2])
                    break
                if opcode == 9:
                    self._send_frame(10, payload)
                    continue
                if opcode in (0, 1):
                    parts.append(payload)
                    if fin:
                        self.received += 1
                        self.messages.put_nowait(
                            (time.time(), b"".join(parts).decode())
                        )
                        parts = []
        except (asyncio.IncompleteReadError, ConnectionError):
            if self.close_code is None:
                self.close_code = 1006
        finally:
            self.messages.put_nowait((time.time(), None))
            if self._writer is not None:
                self._writer.close()

    def _send_frame(self, opcode: int, payload: bytes) -> None:
        if self._writer is None or self._writer.is_closing():
            return
        mask = os.urandom(4)
        length = len(payload)
        if length < 126:
            head = struct.pack("!BB", 0x80 | opcode, 0x80 | length)
        elif length < 65536:
            head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, length)
        else:
            head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, length)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self._writer.write(head + mask + masked)

    def send(self, text: str) -> None:
        self._send_frame(1, text.encode())

    def ack(self, frame: str) -> None:
        match = FRAME_SEQ.match(frame)
        if match:
            self.send(f'{{"ack": {match.group(1)}}}')

    async def recv(self, timeout: float = 10.0) -> tuple[float, str | None]:
        return await asyncio.wait_for(self.messages.get(), timeout)

    def close(self) -> None:
        self._send_frame(8, struct.pack("!H", 1000))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerProcess:
    """`manage.py serve` in its own process, on 127.0.0.1."""

    def __init__(
        self, env: dict[str, str], *, port: int | None = None, log: Path | None = None
    ):
        self.port = port or free_port()
        self.env = {**os.environ, **env}
        self.log_path = log
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> ServerProcess:
        out: Any = open(self.log_path, "wb") if self.log_path else subprocess.DEVNULL
        self.process = subprocess.Popen(
            [
                sys.executable,
                "manage.py",
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--no-migrate",
            ],
            cwd=ROOT,
            env=self.env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited with {self.process.returncode}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return self
            except OSError:
                time.sleep(0.1)  # waiting for another process to listen
        self.stop()
        raise RuntimeError("server did not start")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self.process = None
