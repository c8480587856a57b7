from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from newsroom.runs.models import Run


@login_required
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(Run, pk=pk, reader=request.user)
    return render(request, "newsroom/run_detail.html", {"run": run})


@login_required
def run_list(request: HttpRequest) -> HttpResponse:
    runs = Run.objects.filter(reader=request.user)[:100]
    return render(request, "newsroom/run_list.html", {"runs": runs})
