from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from newsroom.sources.models import Category, Source


@login_required
def source_list(request: HttpRequest) -> HttpResponse:
    sources = Source.objects.filter(reader=request.user).select_related("category")
    return render(request, "newsroom/source_list.html", {"sources": sources})


@login_required
def source_edit(request: HttpRequest, pk: int) -> HttpResponse:
    source = get_object_or_404(Source, pk=pk, reader=request.user)
    return render(request, "newsroom/source_edit.html", {"source": source})


@login_required
def category_list(request: HttpRequest) -> HttpResponse:
    categories = Category.objects.filter(reader=request.user)
    return render(request, "newsroom/category_list.html", {"categories": categories})
