"""Categories: create, rename and describe, reorder, delete."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.db.models import Count, Max
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from newsroom.sources.forms import CategoryForm
from newsroom.sources.models import Category, Source


def _reader_category(request: HttpRequest, pk: int) -> Category:
    return get_object_or_404(Category, pk=pk, reader=request.user)


def _page(request: HttpRequest, form: CategoryForm, status: int = 200) -> HttpResponse:
    categories = list(
        # Explicit order: Meta.ordering is not applied to a GROUP BY query.
        Category.objects.filter(reader=request.user)
        .annotate(n=Count("sources"))
        .order_by("position", "name")
    )
    sources = Source.objects.filter(reader=request.user).select_related("category")
    by_category: dict[int | None, list[Source]] = {}
    for source in sources:
        by_category.setdefault(source.category_id, []).append(source)
    for category in categories:
        category.source_list = by_category.get(category.pk, [])
    return render(
        request,
        "newsroom/category_list.html",
        {
            "categories": categories,
            "loose": by_category.get(None, []),
            "form": form,
        },
        status=status,
    )


@login_required
def category_list(request: HttpRequest) -> HttpResponse:
    """The categories with their sources; POST creates a category at the end."""
    if request.method == "POST":
        form = CategoryForm(request.POST, reader=request.user)
        if not form.is_valid():
            return _page(request, form, status=400)
        last = Category.objects.filter(reader=request.user).aggregate(
            m=Max("position")
        )["m"]
        category = form.save(commit=False)
        category.reader = request.user
        category.position = 0 if last is None else last + 1
        category.save()
        messages.success(request, f"Created the category {category.name}.")
        return redirect("category_list")
    return _page(request, CategoryForm(reader=request.user))


@login_required
def category_edit(request: HttpRequest, pk: int) -> HttpResponse:
    category = _reader_category(request, pk)
    data = request.POST if request.method == "POST" else None
    form = CategoryForm(data, instance=category, reader=request.user)
    if request.method == "POST":
        if form.is_valid():
            form.save()
            messages.success(request, f"Saved the category {category.name}.")
            return redirect("category_list")
        status = 400
    else:
        status = 200
    return render(
        request,
        "newsroom/category_edit.html",
        {"category": category, "form": form},
        status=status,
    )


@login_required
def category_delete(request: HttpRequest, pk: int) -> HttpResponse:
    category = _reader_category(request, pk)
    count = category.sources.count()
    if request.method == "POST":
        name = category.name
        category.delete()  # sources keep living, uncategorised (SET_NULL)
        tail = (
            f"; its {count} source{'s are' if count != 1 else ' is'} now uncategorised"
            if count
            else ""
        )
        messages.success(request, f"Deleted the category {name}{tail}.")
        return redirect("category_list")
    return render(
        request, "newsroom/category_delete.html", {"category": category, "count": count}
    )


@login_required
@require_POST
def category_move(request: HttpRequest, pk: int, direction: str) -> HttpResponse:
    """Swap a category with its neighbour above or below; positions renumbered 0..n."""
    with transaction.atomic():
        category = _reader_category(request, pk)
        ordered = list(Category.objects.filter(reader=request.user).select_for_update())
        index = next(i for i, c in enumerate(ordered) if c.pk == category.pk)
        other = index - 1 if direction == "up" else index + 1
        if 0 <= other < len(ordered):
            ordered[index], ordered[other] = ordered[other], ordered[index]
        for position, item in enumerate(ordered):
            if item.position != position:
                item.position = position
                item.save(update_fields=["position"])
    return redirect("category_list")
