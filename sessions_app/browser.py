"""The shared Chromium: find it, launch it, tell whether it lives, measure it.

Any process that needs a page and finds no live browser launches one, under a
lock on the BrowserHost row so two processes never launch two. Chromium runs in
its own session, so it outlives the process that launched it: a web process
restarting does not take every reader's pages with it. A browser is alive when
its CDP endpoint answers with the websocket id recorded at launch (a different
Chromium that later took the same port does not count) AND its egress proxy
answers with the token recorded at launch. Chromium reaches the network only
through that proxy (egress.py), which refuses private addresses at connect
time; the two are launched, recorded and replaced together. A dead one is
replaced by the next process that needs it; the reaper closes its sessions
meanwhile. A process that refuses private networks does not use a browser
whose proxy passes them (launched under another setting): it relaunches.
"""

from __future__ import annotations

import glob
import json
import logging
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import psutil
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from sessions_app.limits import Room
from sessions_app.models import BrowserHost
from sessions_app.registry import new_tag

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[1]
MIB = 1024 * 1024
INSTALL_HELP = (
    "no Chromium was found for browser sessions. Install one of: Debian's package "
    "(apt-get install chromium) or Playwright's own (pip install playwright, then "
    "playwright install chromium); or point NEWSROOM_BROWSER_PATH at a Chromium"
)
LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--mute-audio",
    "--window-size=1280,800",
    # WebRTC may send UDP only through the proxy, which carries none.
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
]
LAUNCH_TIMEOUT = 30.0


class BrowserUnavailable(Exception):
    """No browser can be had; str() says why and what to install."""


def find_chromium() -> str:
    """Path of the Chromium to launch: the configured one, the system one, else
    Playwright's own download. Never downloads anything."""
    configured = settings.NEWSROOM_BROWSER_PATH
    if configured:
        if os.access(configured, os.X_OK):
            return configured
        raise BrowserUnavailable(
            f"NEWSROOM_BROWSER_PATH={configured!r} is not an executable"
        )
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    if os.access("/usr/bin/chromium", os.X_OK):
        return "/usr/bin/chromium"
    root = os.environ.get("PLAYWRIGHT_BROWSERS_PATH") or str(
        Path.home() / ".cache/ms-playwright"
    )
    patterns = [
        "chromium-*/chrome-linux*/chrome",
        "chromium_headless_shell-*/chrome-*/*shell",
    ]
    for pattern in patterns:
        for path in sorted(glob.glob(os.path.join(root, pattern)), reverse=True):
            if os.access(path, os.X_OK):
                return path
    raise BrowserUnavailable(INSTALL_HELP)


def _fetch_json(url: str, timeout: float = 2.0) -> dict:
    # Loopback only; proxies from the environment must not see the CDP endpoint.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=timeout) as response:
        return json.loads(response.read())


def probe(host: BrowserHost | None) -> bool:
    """True when the recorded browser answers on its endpoint and its egress
    proxy answers too (a browser without its proxy cannot load anything)."""
    if host is None or not host.tag or not host.endpoint:
        return False
    try:
        version = _fetch_json(f"{host.endpoint}/json/version")
    except (OSError, ValueError):
        return False
    return version.get("webSocketDebuggerUrl") == host.ws_url and egress_answers(host)


def egress_answers(host: BrowserHost) -> bool:
    """True when the proxy recorded for `host` answers with its token and mode."""
    from sessions_app.egress import HEALTH_PATH

    if not host.egress_port or not host.egress_token:
        return False
    mode = "allowed" if host.egress_private else "refused"
    expected = f"newsroom-egress {host.egress_token} private={mode}".encode()
    try:
        with socket.create_connection(("127.0.0.1", host.egress_port), timeout=2) as s:
            s.sendall(f"GET {HEALTH_PATH} HTTP/1.0\r\n\r\n".encode())
            answer = b""
            while len(answer) < 4096 and (chunk := s.recv(4096)):
                answer += chunk
    except OSError:
        return False
    return answer.startswith(b"HTTP/1.1 200 ") and answer.endswith(
        b"\r\n\r\n" + expected
    )


@dataclass
class Launched:
    """A Chromium and its egress proxy, both just started."""

    proc: subprocess.Popen
    endpoint: str
    ws_url: str
    user_data_dir: str
    egress: subprocess.Popen
    egress_port: int
    egress_token: str
    egress_private: bool

    def record(self) -> dict:
        """The BrowserHost fields that say where both run."""
        return {
            "endpoint": self.endpoint,
            "ws_url": self.ws_url,
            "pid": self.proc.pid,
            "user_data_dir": self.user_data_dir,
            "egress_port": self.egress_port,
            "egress_pid": self.egress.pid,
            "egress_token": self.egress_token,
            "egress_private": self.egress_private,
        }

    def stop(self) -> None:
        for proc in (self.proc, self.egress):
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(self.user_data_dir, ignore_errors=True)


def launch(executable: str, port: int, *, allow_private: bool) -> Launched:
    """Start the egress proxy and Chromium behind it, with a CDP endpoint on
    127.0.0.1 (`port`, 0 for any). Both run in their own sessions."""
    user_data_dir = tempfile.mkdtemp(prefix="newsroom-chromium-")
    log_path = Path(user_data_dir) / "chromium.log"
    # The proxy's socket is bound here, so Chromium can start at once: its
    # first connections wait in the backlog until the proxy accepts them.
    listener = socket.create_server(("127.0.0.1", 0))
    proxy_port = listener.getsockname()[1]
    try:
        with open(log_path, "wb") as log_file:
            proc = subprocess.Popen(
                [
                    executable,
                    *LAUNCH_ARGS,
                    f"--proxy-server=http://127.0.0.1:{proxy_port}",
                    # Chromium sends loopback straight out unless told not to.
                    "--proxy-bypass-list=<-loopback>",
                    "--remote-debugging-address=127.0.0.1",
                    f"--remote-debugging-port={port}",
                    f"--user-data-dir={user_data_dir}",
                    "about:blank",
                ],
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=log_file,
                start_new_session=True,  # outlives the process that launched it
            )
        try:
            egress, token = _launch_egress(
                listener, user_data_dir, proc.pid, allow_private
            )
        except BaseException:
            proc.kill()
            proc.wait()
            raise
    except BaseException:
        shutil.rmtree(user_data_dir, ignore_errors=True)
        raise
    finally:
        listener.close()
    launched = Launched(
        proc, "", "", user_data_dir, egress, proxy_port, token, allow_private
    )
    active = Path(user_data_dir) / "DevToolsActivePort"
    deadline = time.monotonic() + LAUNCH_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None or egress.poll() is not None:
            tail = log_path.read_text(errors="replace")[-600:]
            what = "Chromium" if proc.poll() is not None else "its egress proxy"
            launched.stop()
            raise BrowserUnavailable(f"{what} ({executable}) exited at start: {tail}")
        try:
            lines = active.read_text().split()
        except FileNotFoundError:
            lines = []
        if len(lines) >= 2:
            launched.endpoint = f"http://127.0.0.1:{lines[0]}"
            launched.ws_url = f"ws://127.0.0.1:{lines[0]}{lines[1]}"
            return launched
        time.sleep(0.05)
    launched.stop()
    raise BrowserUnavailable(
        f"Chromium ({executable}) did not open its CDP endpoint in time"
    )


def _launch_egress(
    listener: socket.socket, user_data_dir: str, browser_pid: int, allow_private: bool
) -> tuple[subprocess.Popen, str]:
    token = secrets.token_hex(12)
    fd = listener.fileno()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p
    )
    with open(Path(user_data_dir) / "egress.log", "ab") as log_file:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "sessions_app.egress",
                f"--fd={fd}",
                f"--token={token}",
                f"--exit-with={browser_pid}",
                *(["--allow-private"] if allow_private else []),
            ],
            pass_fds=(fd,),
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=log_file,
            start_new_session=True,
        )
    return proc, token


def current_host() -> BrowserHost | None:
    host = BrowserHost.objects.filter(pk=1).first()
    return host if host is not None and host.tag else None


def usable(host: BrowserHost | None) -> bool:
    """Alive, and its proxy refuses whatever this process refuses."""
    if not probe(host):
        return False
    if host.egress_private and not settings.NEWSROOM_ALLOW_PRIVATE_NETWORKS:
        log.warning(
            "replacing browser %s: its egress proxy passes private addresses, "
            "which NEWSROOM_ALLOW_PRIVATE_NETWORKS now refuses",
            host.tag,
        )
        return False
    return True


def ensure_browser() -> BrowserHost:
    """The live shared browser, launched by this process if none is."""
    host = current_host()
    if usable(host):
        return host
    executable = find_chromium()
    with transaction.atomic():
        BrowserHost.objects.get_or_create(pk=1)
        host = BrowserHost.objects.select_for_update().get(pk=1)
        if usable(host):
            return host  # another process launched it while we waited
        _stop_process(host)
        launched = launch(
            executable,
            settings.NEWSROOM_BROWSER_PORT,
            allow_private=settings.NEWSROOM_ALLOW_PRIVATE_NETWORKS,
        )
        for name, value in launched.record().items():
            setattr(host, name, value)
        host.tag = new_tag()
        host.hostname = socket.gethostname()
        host.executable = executable
        host.started_at = timezone.now()
        host.baseline_mb = browser_mb(launched.proc.pid) or 0.0
        host.save()
    # Keep the handles so their exits are reaped, not left as zombies.
    _launched.extend((launched.proc, launched.egress))
    log.info(
        "launched Chromium %s (pid %s) at %s behind egress proxy port %s, tag %s",
        executable,
        launched.proc.pid,
        launched.endpoint,
        launched.egress_port,
        host.tag,
    )
    return host


_launched: list[subprocess.Popen] = []


def _stop_process(host: BrowserHost) -> None:
    if not host.hostname or host.hostname != socket.gethostname():
        return
    # Each only if its command line still says it is ours (pids get reused).
    _kill_group(host.pid, host.user_data_dir)
    _kill_group(host.egress_pid, host.egress_token)
    for proc in list(_launched):
        if proc.poll() is not None:
            _launched.remove(proc)
    if host.user_data_dir.startswith(tempfile.gettempdir()):
        shutil.rmtree(host.user_data_dir, ignore_errors=True)


def _kill_group(pid: int | None, marker: str) -> None:
    if not pid:
        return
    try:
        proc = psutil.Process(pid)
        if marker and marker not in " ".join(proc.cmdline()):
            return  # the pid was reused by something else
        os.killpg(pid, signal.SIGTERM)
        proc.wait(timeout=5)
    except (psutil.Error, ProcessLookupError, PermissionError):
        pass
    except psutil.TimeoutExpired:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass


def stop_browser() -> None:
    """Stop the shared browser (shutdown); its sessions must be closed first."""
    with transaction.atomic():
        host = BrowserHost.objects.select_for_update().filter(pk=1).first()
        if host is None or not host.tag:
            return
        _stop_process(host)
        host.tag = host.endpoint = host.ws_url = host.egress_token = ""
        host.pid = host.egress_pid = host.egress_port = None
        host.save()


# --- memory ---


_measured: dict[int, tuple[float, float]] = {}  # pid -> (monotonic time, MB)
MEASURE_EVERY = 2.0  # reading every process's smaps takes 100-250 ms


def browser_mb(pid: int | None, *, max_age: float = 0.0) -> float | None:
    """Megabytes the browser's processes use (proportional set size where the
    kernel tells it, so shared pages are not counted once per process).
    `max_age`: a measurement this recent may be reused."""
    if not pid:
        return None
    cached = _measured.get(pid)
    if cached is not None and time.monotonic() - cached[0] < max_age:
        return cached[1]
    value = _browser_mb(pid)
    if value is not None:
        _measured[pid] = (time.monotonic(), value)
    return value


def _browser_mb(pid: int) -> float | None:
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return None
    total = 0
    for proc in procs:
        try:
            info = proc.memory_full_info()
            total += getattr(info, "pss", None) or info.uss
        except psutil.AccessDenied:
            try:
                total += proc.memory_info().rss
            except psutil.Error:
                pass
        except psutil.Error:
            pass
    return total / MIB


def available_mb() -> int:
    return int(psutil.virtual_memory().available // MIB)


def measure_room(
    host: BrowserHost | None, open_pages: int, available: int | None
) -> Room:
    """The pool's numbers: per-tab memory from the browser's processes over the
    kept pages (the last measurement, or the setting, when none is open)."""
    tab_mb = (
        float(host.tab_mb or settings.NEWSROOM_BROWSER_TAB_MB)
        if host
        else float(settings.NEWSROOM_BROWSER_TAB_MB)
    )
    if host is not None and open_pages > 0 and host.hostname == socket.gethostname():
        total = browser_mb(host.pid, max_age=MEASURE_EVERY)
        if total is not None and total > host.baseline_mb:
            measured = (total - host.baseline_mb) / open_pages
            if measured >= 1:
                tab_mb = measured
                BrowserHost.objects.filter(pk=host.pk, tag=host.tag).update(
                    tab_mb=measured
                )
    return Room(
        available_mb=available,
        reserve_mb=settings.NEWSROOM_BROWSER_RESERVE_MB,
        tab_mb=max(int(round(tab_mb)), 1),
        max_tabs=settings.NEWSROOM_BROWSER_MAX_TABS,
    )
