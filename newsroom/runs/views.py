from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from newsroom.runs.forms import ScheduleForm
from newsroom.runs.models import Run, RunSchedule
from newsroom.runs.status import RunStatus
from newsroom.runs.worker import RunAlreadyActive, queue_run, resume_run


def _get_run(request: HttpRequest, pk: int) -> Run:
    # Another reader's run is a 404, never a 403: its existence is not shown.
    return get_object_or_404(Run, pk=pk, reader=request.user)


@login_required
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = _get_run(request, pk)
    status = RunStatus.from_json(run.status or {}, run.pk, run.reader_id)
    sources = sorted(
        status.sources.values(), key=lambda s: (s["state"] != "error", s["title"])
    )
    context = {
        "run": run,
        "status": status,
        "sources": sources,
        "counts": {
            state: status.counts[state] for state in ("ok", "not_modified", "error")
        },
        "pending": status.counts["queued"] + status.counts["fetching"],
        # "fetching" lines are for live views; the final page shows what happened.
        "log": [line for line in reversed(status.log) if line.get("level") != "debug"],
    }
    return render(request, "newsroom/run_detail.html", context)


@login_required
def run_list(request: HttpRequest) -> HttpResponse:
    # The status JSON can be large (hundreds of sources, the log): not needed here.
    runs = Run.objects.filter(reader=request.user).defer("status")[:100]
    schedule = RunSchedule.objects.filter(reader=request.user).first()
    form = ScheduleForm(instance=schedule)
    return render(request, "newsroom/run_list.html", {"runs": runs, "form": form})


@login_required
@require_POST
def run_now(request: HttpRequest) -> HttpResponse:
    try:
        run = queue_run(request.user, Run.Trigger.MANUAL)
    except RunAlreadyActive as e:
        messages.warning(request, f"A run is already going: {e}.")
        return redirect(e.run)
    messages.success(request, "Run queued: every source is being collected.")
    return redirect(run)


@login_required
@require_POST
def run_resume(request: HttpRequest, pk: int) -> HttpResponse:
    run = _get_run(request, pk)
    if resume_run(run):
        messages.success(
            request, "Resumed: only the sources not yet done will be fetched."
        )
    else:
        messages.warning(
            request,
            "This run cannot be resumed now (not interrupted, or another run is going).",
        )
    return redirect(run)


@login_required
@require_POST
def run_schedule(request: HttpRequest) -> HttpResponse:
    schedule, _ = RunSchedule.objects.get_or_create(reader=request.user)
    previous = schedule.run_at
    form = ScheduleForm(request.POST, instance=schedule)
    if form.is_valid():
        schedule = form.save(commit=False)
        if schedule.run_at != previous:
            # A new time still ahead today runs today; one already past, tomorrow.
            now = timezone.localtime()
            due_today = schedule.run_at is not None and schedule.run_at > now.time()
            schedule.last_run_on = None if due_today else now.date()
        schedule.save()
        if schedule.run_at:
            messages.success(request, f"Daily run set for {schedule.run_at:%H:%M}.")
        else:
            messages.success(request, "Daily run turned off.")
        return redirect("run_list")
    runs = Run.objects.filter(reader=request.user).defer("status")[:100]
    return render(
        request, "newsroom/run_list.html", {"runs": runs, "form": form}, status=400
    )
