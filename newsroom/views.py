from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from newsroom.sources.grouping import sources_by_category


@login_required
def dashboard(request: HttpRequest) -> HttpResponse:
    groups = sources_by_category(request.user)
    return render(request, "newsroom/dashboard.html", {"groups": groups})
