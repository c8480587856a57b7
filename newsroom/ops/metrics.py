"""/metrics in the Prometheus text format, written by hand (a dozen families do
not earn a client library).

Database figures are counted at scrape time. Live figures (open streams, frames
and bytes sent) live in each web process: every web process reports its own in
its heartbeat's detail, and the page lists each fresh web process with a
`process` label (the scraped process uses its current figures). Sum over the
label for totals; a counter that resets belongs to a restarted process.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import Count, Min, Q
from django.utils import timezone

from fold_app.models import Delivery, Item
from newsroom.ops import heartbeat
from newsroom.ops.models import Heartbeat, beat_state
from newsroom.runs.models import Run
from newsroom.sources.models import Source
from sessions_app.models import BrowserSession

QUEUED = (Delivery.Status.PENDING, Delivery.Status.DEFERRED)
FOLD_WINDOWS = (("1m", 60), ("5m", 300))

Labels = dict[str, str]


@dataclass
class Family:
    name: str
    kind: str  # gauge or counter
    help: str
    samples: list[tuple[Labels, float]] = field(default_factory=list)

    def add(self, value: float, **labels: str) -> None:
        self.samples.append((labels, value))


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    if isinstance(value, int) or float(value).is_integer():
        return str(int(value))
    return repr(float(value))


def render(families: Iterable[Family]) -> str:
    lines = []
    for family in families:
        lines.append(f"# HELP {family.name} {family.help}")
        lines.append(f"# TYPE {family.name} {family.kind}")
        for labels, value in family.samples:
            if labels:
                inner = ",".join(f'{k}="{_escape(str(v))}"' for k, v in labels.items())
                lines.append(f"{family.name}{{{inner}}} {_number(value)}")
            else:
                lines.append(f"{family.name} {_number(value)}")
    return "\n".join(lines) + "\n"


def collect(now: datetime | None = None, own: dict | None = None) -> list[Family]:
    """Every family, counted now. `own`: this process's live figures, which
    replace its (older) heartbeat copy."""
    now = now or timezone.now()
    families = []

    runs = Family("newsroom_runs", "gauge", "Runs by state.")
    by_state = dict(Run.objects.values_list("state").annotate(n=Count("id")))
    for state in Run.State.values:
        runs.add(by_state.get(state, 0), state=state)
    families.append(runs)

    sources = Family(
        "newsroom_sources",
        "gauge",
        "Sources by health: ok (last fetch worked), failing (consecutive errors), "
        "new (never fetched).",
    )
    counts = Source.objects.aggregate(
        failing=Count("id", filter=Q(error_count__gt=0)),
        ok=Count("id", filter=Q(error_count=0, last_success_at__isnull=False)),
        new=Count("id", filter=Q(error_count=0, last_success_at__isnull=True)),
    )
    for health in ("ok", "failing", "new"):
        sources.add(counts[health], health=health)
    families.append(sources)

    deliveries = Family("newsroom_deliveries", "gauge", "Deliveries by fold status.")
    by_status = dict(Delivery.objects.values_list("status").annotate(n=Count("id")))
    for status in Delivery.Status.values:
        deliveries.add(by_status.get(status, 0), status=status)
    families.append(deliveries)

    oldest = Delivery.objects.filter(status__in=QUEUED).aggregate(
        oldest=Min("received_at")
    )["oldest"]
    lag = Family(
        "newsroom_fold_lag_seconds",
        "gauge",
        "Age of the oldest delivery waiting to be folded (pending or deferred); "
        "0 when none waits.",
    )
    lag.add(max((now - oldest).total_seconds(), 0.0) if oldest else 0)
    families.append(lag)

    folded = Family(
        "newsroom_deliveries_folded",
        "gauge",
        "Deliveries folded (parsed or failed) within the window, from folded_at.",
    )
    rate = Family(
        "newsroom_fold_rate_per_second",
        "gauge",
        "Deliveries folded per second, averaged over the window.",
    )
    windows = Delivery.objects.aggregate(
        **{
            name: Count("id", filter=Q(folded_at__gte=now - timedelta(seconds=s)))
            for name, s in FOLD_WINDOWS
        }
    )
    for name, seconds in FOLD_WINDOWS:
        folded.add(windows[name], window=name)
        rate.add(round(windows[name] / seconds, 3), window=name)
    families += [folded, rate]

    items = Family("newsroom_items", "gauge", "Items folded from the journal.")
    items.add(Item.objects.count())
    families.append(items)

    pages = Family("newsroom_browser_pages_open", "gauge", "Kept browser pages open.")
    pages.add(BrowserSession.objects.filter(state=BrowserSession.State.OPEN).count())
    families.append(pages)

    families += _heartbeat_families(list(Heartbeat.objects.all()), now, own)
    return families


def _heartbeat_families(
    rows: list[Heartbeat], now: datetime, own: dict | None
) -> list[Family]:
    stale = heartbeat.stale_after()
    age = Family(
        "newsroom_heartbeat_age_seconds",
        "gauge",
        "Seconds since each role's process last beat (stale past "
        f"{stale.total_seconds():g} s).",
    )
    up = Family(
        "newsroom_heartbeat_fresh",
        "gauge",
        "1 when the process's heartbeat is fresh, 0 when stale or stopped.",
    )
    role_up = Family(
        "newsroom_role_up", "gauge", "1 when at least one process of the role is fresh."
    )
    streams = Family(
        "newsroom_live_streams_open", "gauge", "Open live streams, per web process."
    )
    frames = Family(
        "newsroom_live_frames_sent_total",
        "counter",
        "Live frames sent since the web process started.",
    )
    full = Family(
        "newsroom_live_full_frames_sent_total",
        "counter",
        "Live frames that carried the whole region (not a patch).",
    )
    sent = Family(
        "newsroom_live_bytes_sent_total",
        "counter",
        "Bytes of live frames sent since the web process started.",
    )
    roles: dict[str, int] = {}
    web: dict[str, dict] = {}
    own_process = heartbeat.heartbeats().process
    for row in rows:
        state = beat_state(row.last_beat_at, row.stopped_at, stale, now)
        fresh = int(state == Heartbeat.State.FRESH)
        roles[row.role] = max(roles.get(row.role, 0), fresh)
        if state == Heartbeat.State.STOPPED:
            continue
        seconds = round((now - row.last_beat_at).total_seconds(), 1)
        age.add(seconds, role=row.role, process=row.process)
        up.add(fresh, role=row.role, process=row.process)
        if row.role == heartbeat.WEB and fresh:
            web[row.process] = (row.detail or {}).get("live") or {}
    if own is not None:
        web[own_process] = own  # fresher than its last beat, and there before one
    for process, live in sorted(web.items()):
        streams.add(live.get("streams", 0), process=process)
        frames.add(live.get("frames", 0), process=process)
        full.add(live.get("full_frames", 0), process=process)
        sent.add(live.get("bytes", 0), process=process)
    for role in sorted(set(roles) | set(heartbeat.ROLES)):
        role_up.add(roles.get(role, 0), role=role)
    return [age, up, role_up, streams, frames, full, sent]
