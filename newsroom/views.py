from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from newsroom.sources.grouping import sources_by_category


@login_required
def dashboard(request: HttpRequest) -> HttpResponse:
    groups = sources_by_category(request.user)
    sources = [s for g in groups for s in g.sources]
    failing = sum(1 for s in sources if s.is_failing)
    return render(
        request,
        "newsroom/dashboard.html",
        {"groups": groups, "total": len(sources), "failing": failing},
    )
