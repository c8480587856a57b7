"""The shared Chromium: find it, launch it, tell whether it lives, measure it.

Any process that needs a page and finds no live browser launches one, under a
lock on the BrowserHost row so two processes never launch two. Chromium runs in
its own session, so it outlives the process that launched it: a web process
restarting does not take every reader's pages with it. A browser is alive when
its CDP endpoint answers with the websocket id recorded at launch (a different
Chromium that later took the same port does not count). A dead one is replaced
by the next process that needs it; the reaper closes its sessions meanwhile.
"""

from __future__ import annotations

import glob
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import psutil
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from sessions_app.limits import Room
from sessions_app.models import BrowserHost
from sessions_app.registry import new_tag

log = logging.getLogger(__name__)

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
    """True when the recorded browser answers on its endpoint."""
    if host is None or not host.tag or not host.endpoint:
        return False
    try:
        version = _fetch_json(f"{host.endpoint}/json/version")
    except (OSError, ValueError):
        return False
    return version.get("webSocketDebuggerUrl") == host.ws_url


def launch(executable: str, port: int) -> tuple[subprocess.Popen, str, str, str]:
    """Start Chromium with a CDP endpoint on 127.0.0.1; (process, endpoint, ws, dir)."""
    user_data_dir = tempfile.mkdtemp(prefix="newsroom-chromium-")
    log_path = Path(user_data_dir) / "chromium.log"
    with open(log_path, "wb") as log_file:
        proc = subprocess.Popen(
            [
                executable,
                *LAUNCH_ARGS,
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
    active = Path(user_data_dir) / "DevToolsActivePort"
    deadline = time.monotonic() + LAUNCH_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log_path.read_text(errors="replace")[-600:]
            shutil.rmtree(user_data_dir, ignore_errors=True)
            raise BrowserUnavailable(
                f"Chromium ({executable}) exited at start with status {proc.returncode}: {tail}"
            )
        try:
            lines = active.read_text().split()
        except FileNotFoundError:
            lines = []
        if len(lines) >= 2:
            endpoint = f"http://127.0.0.1:{lines[0]}"
            return proc, endpoint, f"ws://127.0.0.1:{lines[0]}{lines[1]}", user_data_dir
        time.sleep(0.05)
    proc.kill()
    shutil.rmtree(user_data_dir, ignore_errors=True)
    raise BrowserUnavailable(
        f"Chromium ({executable}) did not open its CDP endpoint in time"
    )


def current_host() -> BrowserHost | None:
    host = BrowserHost.objects.filter(pk=1).first()
    return host if host is not None and host.tag else None


def ensure_browser() -> BrowserHost:
    """The live shared browser, launched by this process if none is."""
    host = current_host()
    if probe(host):
        return host
    executable = find_chromium()
    with transaction.atomic():
        BrowserHost.objects.get_or_create(pk=1)
        host = BrowserHost.objects.select_for_update().get(pk=1)
        if probe(host):
            return host  # another process launched it while we waited
        _stop_process(host)
        proc, endpoint, ws_url, user_data_dir = launch(
            executable, settings.NEWSROOM_BROWSER_PORT
        )
        host.tag = new_tag()
        host.endpoint = endpoint
        host.ws_url = ws_url
        host.pid = proc.pid
        host.hostname = socket.gethostname()
        host.executable = executable
        host.user_data_dir = user_data_dir
        host.started_at = timezone.now()
        host.baseline_mb = browser_mb(proc.pid) or 0.0
        host.save()
    _launched.append(proc)  # keep the handle so its exit is reaped, not a zombie
    log.info(
        "launched Chromium %s (pid %s) at %s, tag %s",
        executable,
        proc.pid,
        endpoint,
        host.tag,
    )
    return host


_launched: list[subprocess.Popen] = []


def _stop_process(host: BrowserHost) -> None:
    if not host.pid or host.hostname != socket.gethostname():
        return
    try:
        proc = psutil.Process(host.pid)
        if host.user_data_dir and host.user_data_dir not in " ".join(proc.cmdline()):
            return  # the pid was reused by something else
        os.killpg(host.pid, signal.SIGTERM)
        proc.wait(timeout=5)
    except (psutil.Error, ProcessLookupError, PermissionError):
        pass
    except psutil.TimeoutExpired:
        try:
            os.killpg(host.pid, signal.SIGKILL)
        except OSError:
            pass
    for proc in list(_launched):
        if proc.poll() is not None:
            _launched.remove(proc)
    if host.user_data_dir.startswith(tempfile.gettempdir()):
        shutil.rmtree(host.user_data_dir, ignore_errors=True)


def stop_browser() -> None:
    """Stop the shared browser (shutdown); its sessions must be closed first."""
    with transaction.atomic():
        host = BrowserHost.objects.select_for_update().filter(pk=1).first()
        if host is None or not host.tag:
            return
        _stop_process(host)
        host.tag = host.endpoint = host.ws_url = ""
        host.pid = None
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
