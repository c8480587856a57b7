"""JSON endpoints for kept pages (owner only; errors carry the status and a message)."""

from __future__ import annotations

import json

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_GET, require_POST

from sessions_app.registry import SessionError
from sessions_app.sessions import ACTIONS, Sessions


def _body(request: HttpRequest) -> dict:
    if not request.body:
        return {}
    try:
        data = json.loads(request.body)
    except ValueError:
        raise SessionError(400, "the body is not JSON") from None
    if not isinstance(data, dict):
        raise SessionError(400, "the body must be a JSON object")
    return data


def _error(e: SessionError) -> JsonResponse:
    return JsonResponse({"error": str(e), "status": e.status}, status=e.status)


@require_POST
def api_open(request: HttpRequest) -> JsonResponse:
    try:
        data = _body(request)
        url = data.get("url")
        if not isinstance(url, str) or not url:
            raise SessionError(400, "give the page's address as url")
        outcome = Sessions().scrape(
            request.user,
            url,
            keep=bool(data.get("keep", True)),
            wait_for=data.get("wait_for"),
        )
    except SessionError as e:
        return _error(e)
    return JsonResponse(outcome.as_json(), status=201)


@require_GET
def api_state(request: HttpRequest, sid: str) -> JsonResponse:
    try:
        outcome = Sessions().act(request.user, sid, "state")
    except SessionError as e:
        return _error(e)
    return JsonResponse(outcome.as_json())


@require_POST
def api_act(request: HttpRequest, sid: str, action: str) -> JsonResponse:
    if action not in ACTIONS or action in ("state", "screenshot"):
        return _error(SessionError(404, f"no action {action!r}"))
    try:
        params = _body(request)
        needs = {
            "type": ["text"],
            "press": ["key"],
            "wait": ["selector"],
            "goto": ["url"],
        }
        if (
            action == "click"
            and not params.get("selector")
            and not {"x", "y"} <= params.keys()
        ):
            raise SessionError(400, "click needs a selector, or x and y")
        missing = [k for k in needs.get(action, []) if not params.get(k)]
        if missing:
            raise SessionError(400, f"{action} needs {', '.join(missing)}")
        outcome = Sessions().act(request.user, sid, action, **params)
    except SessionError as e:
        return _error(e)
    except (TypeError, ValueError) as e:
        return _error(SessionError(400, f"bad input for {action}: {e}"))
    return JsonResponse(outcome.as_json())


@require_GET
def api_screenshot(request: HttpRequest, sid: str) -> HttpResponse:
    try:
        outcome = Sessions().act(request.user, sid, "screenshot")
    except SessionError as e:
        return _error(e)
    return HttpResponse(outcome.png, content_type="image/png")


@require_POST
def api_close(request: HttpRequest, sid: str) -> JsonResponse:
    try:
        record = Sessions().close(request.user, sid)
    except SessionError as e:
        return _error(e)
    return JsonResponse(
        {"id": record.pk, "state": record.state, "reason": record.reason}
    )
