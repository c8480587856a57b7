"""Benchmark browser sessions against a local page with a real Chromium.

    .venv/bin/python bench/sessions.py [--pages 8] [--actions 40]

Runs on a throwaway SQLite database and its own browser. Prints figures as
key=value; the last line is
`open_ms_p50=… action_ms_p50=… mb_per_page=… cap_at_4gb=…`, where cap_at_4gb is
what memory alone admits with 4 GiB available, the reserve setting and the
measured per-page memory (the tab limit setting is printed beside it).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PAGE = b"""<!doctype html><title>bench</title>
<button id=go onclick="document.getElementById('n').textContent++">more</button>
<p id=n>0</p><script>for (let i = 0; i < 200; i++) {
  const a = document.createElement('a'); a.href = '/story/' + i; a.textContent = 'Story ' + i;
  document.body.appendChild(a);
}</script>"""


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, *args) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=8)
    parser.add_argument("--actions", type=int, default=40)
    args = parser.parse_args()

    data_dir = tempfile.mkdtemp(prefix="newsroom-bench-")
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "newsroom.settings",
            "NEWSROOM_DATA_DIR": data_dir,
            "NEWSROOM_ALLOW_PRIVATE_NETWORKS": "1",
            "LOG_LEVEL": "WARNING",
        }
    )
    os.environ.pop("DATABASE_URL", None)
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from sessions_app import browser
    from sessions_app.limits import Room, session_cap
    from sessions_app.reaper import Reaper
    from sessions_app.sessions import Sessions

    call_command("migrate", verbosity=0)
    reader = get_user_model().objects.create_user("bench", password="bench-password-1")
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"

    settings.NEWSROOM_BROWSER_MAX_TABS = args.pages + 2
    started = time.perf_counter()
    host = browser.ensure_browser()
    launch_ms = (time.perf_counter() - started) * 1000
    baseline = browser.browser_mb(host.pid) or 0.0
    sessions = Sessions(available=lambda: None)
    sessions.scrape(reader, url, keep=False)  # warm the connection

    open_ms, ids = [], []
    for _ in range(args.pages):
        t = time.perf_counter()
        ids.append(sessions.scrape(reader, url, keep=True).session.pk)
        open_ms.append((time.perf_counter() - t) * 1000)
    time.sleep(1.0)  # let renderers settle before measuring memory
    total = browser.browser_mb(host.pid) or 0.0
    mb_per_page = (total - baseline) / len(ids)

    action_ms = []
    for i in range(args.actions):
        sid = ids[i % len(ids)]
        t = time.perf_counter()
        if i % 2:
            sessions.act(reader, sid, "click", selector="#go")
        else:
            sessions.act(reader, sid, "state")
        action_ms.append((time.perf_counter() - t) * 1000)
    t = time.perf_counter()
    sessions.act(reader, ids[0], "screenshot")
    screenshot_ms = (time.perf_counter() - t) * 1000

    Reaper(available=lambda: None).shutdown()
    server.shutdown()

    room = Room(
        available_mb=4096,
        reserve_mb=settings.NEWSROOM_BROWSER_RESERVE_MB,
        tab_mb=max(int(round(mb_per_page)), 1),
        max_tabs=10**6,
    )
    cap = session_cap(room, 0)
    open_p50 = statistics.median(open_ms)
    action_p50 = statistics.median(action_ms)
    print(f"pages={len(ids)} actions={len(action_ms)} launch_ms={launch_ms:.0f}")
    print(f"browser_idle_mb={baseline:.0f} browser_total_mb={total:.0f}")
    print(
        f"screenshot_ms={screenshot_ms:.0f} open_ms_p90={sorted(open_ms)[int(len(open_ms) * 0.9) - 1]:.0f}"
    )
    print(f"open_to_action_ratio={open_p50 / action_p50:.1f}")
    print(
        f"mb_per_page_vs_design_estimate={mb_per_page / 85:.2f} "
        f"(DESIGN.md: about 20 MB per page + 65 MB per context)"
    )
    print(
        f"reserve_mb={settings.NEWSROOM_BROWSER_RESERVE_MB} "
        f"tab_limit_setting={settings.NEWSROOM_BROWSER_MAX_TABS - 1}"
    )
    print(
        f"open_ms_p50={open_p50:.0f} action_ms_p50={action_p50:.0f} "
        f"mb_per_page={mb_per_page:.1f} cap_at_4gb={cap}"
    )


if __name__ == "__main__":
    main()
