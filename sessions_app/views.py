"""The reader's pages: sessions list, interact view, secrets."""

from __future__ import annotations

import time

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from sessions_app.models import BrowserSession, ReaderSecret
from sessions_app.registry import SessionError
from sessions_app.secrets import set_secret
from sessions_app.sessions import Outcome, Sessions

KEYS = [
    "Enter",
    "Tab",
    "Escape",
    "Backspace",
    "ArrowUp",
    "ArrowDown",
    "PageDown",
    "PageUp",
]


def _own_session(request: HttpRequest, sid: str) -> BrowserSession:
    # Another reader's session is a 404 here, like every reader-owned page.
    return get_object_or_404(BrowserSession, pk=sid, owner=request.user)


def session_list(request: HttpRequest) -> HttpResponse:
    now = timezone.now()
    rows = list(
        BrowserSession.objects.filter(owner=request.user).order_by("-created_at")[:100]
    )
    for row in rows:
        used = row.last_used_at or row.opened_at
        row.idle_s = int((now - used).total_seconds()) if used else None
    return render(
        request,
        "sessions_app/session_list.html",
        {
            "open": [r for r in rows if r.state == BrowserSession.State.OPEN],
            "others": [r for r in rows if r.state != BrowserSession.State.OPEN],
        },
    )


@require_POST
def session_open(request: HttpRequest) -> HttpResponse:
    url = request.POST.get("url", "").strip()
    wait_for = request.POST.get("wait_for", "").strip() or None
    try:
        outcome = Sessions().scrape(request.user, url, keep=True, wait_for=wait_for)
    except SessionError as e:
        messages.error(request, str(e))
        return redirect("sessions:list")
    return redirect("sessions:interact", sid=outcome.session.pk)


def session_interact(request: HttpRequest, sid: str) -> HttpResponse:
    record = _own_session(request, sid)
    return render(
        request,
        "sessions_app/interact.html",
        {"s": record, "keys": KEYS, "stamp": time.time_ns()},
    )


def _params(request: HttpRequest) -> tuple[str, dict]:
    post = request.POST
    action = post.get("action", "")
    params: dict = {}
    if action == "click":
        if post.get("at.x") is not None:
            params = {"x": post.get("at.x"), "y": post.get("at.y")}
        else:
            params = {"selector": post.get("selector", "")}
    elif action == "type":
        params = {"text": post.get("text", ""), "selector": post.get("selector", "")}
    elif action == "press":
        params = {"key": post.get("key", "")}
    elif action == "scroll":
        params = {"dx": post.get("dx", "0"), "dy": post.get("dy", "0")}
    elif action == "wait":
        params = {"selector": post.get("selector", "")}
    elif action == "goto":
        params = {"url": post.get("url", "").strip()}
    return action, params


@require_POST
def session_act(request: HttpRequest, sid: str) -> HttpResponse:
    record = _own_session(request, sid)
    action, params = _params(request)
    error = ""
    outcome: Outcome | None = None
    try:
        outcome = Sessions().act(request.user, sid, action, **params)
    except (SessionError, ValueError, KeyError) as e:
        error = (
            str(e) if isinstance(e, SessionError) else f"{action}: missing or bad input"
        )
    if not request.htmx:
        if error:
            messages.error(request, error)
        elif outcome and (outcome.message or outcome.blocked):
            messages.info(
                request, "; ".join(filter(None, [outcome.message, *outcome.blocked]))
            )
        return redirect("sessions:interact", sid=sid)
    record.refresh_from_db()
    return render(
        request,
        "sessions_app/_panel.html",
        {"s": record, "outcome": outcome, "error": error, "stamp": time.time_ns()},
    )


def session_screenshot(request: HttpRequest, sid: str) -> HttpResponse:
    _own_session(request, sid)
    try:
        outcome = Sessions().act(request.user, sid, "screenshot")
    except SessionError as e:
        return HttpResponse(str(e), status=e.status, content_type="text/plain")
    response = HttpResponse(outcome.png, content_type="image/png")
    response["Cache-Control"] = "no-store"
    return response


@require_POST
def session_close(request: HttpRequest, sid: str) -> HttpResponse:
    _own_session(request, sid)
    try:
        Sessions().close(request.user, sid)
        messages.success(request, "Session closed.")
    except SessionError as e:
        messages.info(request, str(e))
    return redirect("sessions:list")


@require_http_methods(["GET", "POST"])
def secret_list(request: HttpRequest) -> HttpResponse:
    error = ""
    if request.method == "POST":
        name = request.POST.get("name", "").strip()
        value = request.POST.get("value", "")
        if (
            not name
            or not all(c.isalnum() or c in "-_" for c in name)
            or len(name) > 64
        ):
            error = "A name is letters, digits, - and _ (at most 64)."
        elif not value:
            error = "The value is empty."
        else:
            set_secret(request.user, name, value)
            messages.success(
                request, f"Saved secret {name}; type it as {{{{secret:{name}}}}}."
            )
            return redirect("sessions:secrets")
    return render(
        request,
        "sessions_app/secrets.html",
        {"secrets": ReaderSecret.objects.filter(owner=request.user), "error": error},
        status=400 if error else 200,
    )


@require_POST
def secret_delete(request: HttpRequest, name: str) -> HttpResponse:
    deleted, _ = ReaderSecret.objects.filter(owner=request.user, name=name).delete()
    if not deleted:
        raise Http404("no such secret")
    messages.success(request, f"Deleted secret {name}.")
    return redirect("sessions:secrets")
