from __future__ import annotations

import json

from asgiref.sync import sync_to_async
from django.contrib.auth.decorators import login_not_required
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from newsroom.ops import health, metrics
from newsroom.ops.access import is_operator

PROMETHEUS_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def _operator(request: HttpRequest) -> bool:
    # request.user is lazy and reads the session from the database.
    return is_operator(request)


@login_not_required
@never_cache
@require_GET
async def healthz(request: HttpRequest) -> HttpResponse:
    if not await sync_to_async(_operator)(request):
        raise Http404()
    healthy, body = await health.health()
    return HttpResponse(
        json.dumps(body, indent=2),
        status=200 if healthy else 503,
        content_type="application/json",
    )


@login_not_required
@never_cache
@require_GET
def metrics_view(request: HttpRequest) -> HttpResponse:
    if not _operator(request):
        raise Http404()
    from newsroom.live.hub import live_stats

    text = metrics.render(metrics.collect(own=live_stats()))
    return HttpResponse(text, content_type=PROMETHEUS_TYPE)
