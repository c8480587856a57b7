"""Sources: the list with health, adding by URL (feed discovery), edit, delete, move."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from newsroom.sources.discovery import Discovery, InvalidURL, discover, normalise_url
from newsroom.sources.fetching import safe_fetch
from newsroom.sources.forms import AddSourceForm, ChooseFeedsForm, SourceForm
from newsroom.sources.models import Category, Source


def _reader_source(request: HttpRequest, pk: int) -> Source:
    return get_object_or_404(Source, pk=pk, reader=request.user)


def _reader_category(request: HttpRequest, value: str | None) -> Category | None:
    """The reader's category named by a posted id; "" means uncategorised; others 404."""
    if not value:
        return None
    try:
        pk = int(value)
    except ValueError:
        raise Http404("No such category") from None
    return get_object_or_404(Category, pk=pk, reader=request.user)


def _next(request: HttpRequest, default: str) -> str:
    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return reverse(default)


@login_required
def source_list(request: HttpRequest) -> HttpResponse:
    """All the reader's sources with their health; `?show=failing|never` and `?q=`."""
    mine = Source.objects.filter(reader=request.user)
    show = request.GET.get("show", "")
    query = request.GET.get("q", "").strip()
    sources = mine.select_related("category")
    if show == "failing":
        sources = sources.filter(error_count__gt=0)
    elif show == "never":
        sources = sources.filter(
            last_fetched_at__isnull=True, last_success_at__isnull=True
        )
    if query:
        sources = sources.filter(
            Q(title__icontains=query)
            | Q(url__icontains=query)
            | Q(category__name__icontains=query)
        )
    return render(
        request,
        "newsroom/source_list.html",
        {
            "sources": sources,
            "total": mine.count(),
            "failing": mine.filter(error_count__gt=0).count(),
            "show": show,
            "query": query,
            "form": AddSourceForm(reader=request.user),
            "categories": Category.objects.filter(reader=request.user),
        },
    )


@login_required
def source_add(request: HttpRequest) -> HttpResponse:
    """Add a source by URL. Feeds go through discovery; several found: the reader picks."""
    if request.method != "POST":
        return render(
            request,
            "newsroom/source_add.html",
            {"form": AddSourceForm(reader=request.user)},
        )
    if "feeds" in request.POST:
        return _add_chosen(request)
    form = AddSourceForm(request.POST, reader=request.user)
    if not form.is_valid():
        return render(request, "newsroom/source_add.html", {"form": form}, status=400)
    data = form.cleaned_data
    if data["kind"] != Source.Kind.FEED:
        source = Source.objects.create(
            reader=request.user,
            url=data["url"],
            kind=data["kind"],
            category=data["category"],
            link_pattern=data["link_pattern"],
        )
        messages.success(
            request,
            f"Added {source.display_title} as a {source.get_kind_display().lower()}.",
        )
        return redirect("source_list")

    try:
        found = discover(data["url"], safe_fetch)
    except InvalidURL as e:
        form.add_error("url", str(e))
        return render(request, "newsroom/source_add.html", {"form": form}, status=400)
    if not found.feeds:
        form.add_error("url", found.message)
        return render(request, "newsroom/source_add.html", {"form": form}, status=400)
    if len(found.feeds) == 1:
        feed = found.feeds[0]
        added = _create_feeds(
            request, [(feed.url, feed.title)], data["category"], found
        )
        if not added:
            return redirect("source_list")
        how = (
            "This address is a feed"
            if found.direct
            else f"Found the feed on {found.url}"
        )
        messages.success(request, f"{how}: added {added[0].display_title}.")
        return redirect("source_list")
    choose = ChooseFeedsForm(
        reader=request.user,
        choices=_choices(found),
        initial={"feeds": [found.feeds[0].url], "category": data["category"]},
    )
    return render(
        request, "newsroom/source_choose.html", {"form": choose, "discovery": found}
    )


def _choices(found: Discovery) -> list[tuple[str, str]]:
    return [
        (f.url, f"{f.title or f.url} ({f.format})" if f.format else f.title or f.url)
        for f in found.feeds
    ]


def _add_chosen(request: HttpRequest) -> HttpResponse:
    # The offered feeds come back in hidden fields; the reader may only add those.
    offered = request.POST.getlist("offered")
    titles = request.POST.getlist("offered_title")
    # They round-trip through the browser, so only well-formed http(s) ones count.
    choices = [
        (url, titles[i] if i < len(titles) else url)
        for i, url in enumerate(offered)
        if _is_fetchable(url)
    ]
    form = ChooseFeedsForm(request.POST, reader=request.user, choices=choices)
    if not form.is_valid():
        found = Discovery(url=request.POST.get("page_url", ""))
        return render(
            request,
            "newsroom/source_choose.html",
            {"form": form, "discovery": found, "offered": choices},
            status=400,
        )
    by_url = dict(choices)
    picked = [
        (url, _title_only(by_url.get(url, ""))) for url in form.cleaned_data["feeds"]
    ]
    added = _create_feeds(request, picked, form.cleaned_data["category"], None)
    if added:
        names = ", ".join(s.display_title for s in added)
        messages.success(request, f"Added {names}.")
    return redirect("source_list")


def _is_fetchable(url: str) -> bool:
    try:
        return normalise_url(url) == url
    except InvalidURL:
        return False


def _title_only(label: str) -> str:
    # The choice label is "Title (Format)"; the source keeps just the title.
    if label.endswith(")") and " (" in label:
        return label.rsplit(" (", 1)[0]
    return label


def _create_feeds(request, picked, category, found) -> list[Source]:
    added: list[Source] = []
    for url, title in picked:
        if Source.objects.filter(reader=request.user, url=url).exists():
            messages.warning(
                request, f"You already have {url}; it was not added again."
            )
            continue
        try:
            with transaction.atomic():
                added.append(
                    Source.objects.create(
                        reader=request.user,
                        url=url,
                        title=(title or "")[:300] if title != url else "",
                        kind=Source.Kind.FEED,
                        category=category,
                        site_url=found.url if found and not found.direct else "",
                    )
                )
        except IntegrityError:  # added by another tab a moment ago
            messages.warning(
                request, f"You already have {url}; it was not added again."
            )
    return added


@login_required
def source_edit(request: HttpRequest, pk: int) -> HttpResponse:
    source = _reader_source(request, pk)
    form = SourceForm(
        request.POST if request.method == "POST" else None, instance=source
    )
    if request.method == "POST":
        if form.is_valid():
            form.save()
            messages.success(request, f"Saved {source.display_title}.")
            return redirect("source_list")
        return render(
            request,
            "newsroom/source_edit.html",
            {"source": source, "form": form},
            status=400,
        )
    return render(
        request, "newsroom/source_edit.html", {"source": source, "form": form}
    )


@login_required
def source_delete(request: HttpRequest, pk: int) -> HttpResponse:
    source = _reader_source(request, pk)
    if request.method == "POST":
        name = source.display_title
        source.delete()
        messages.success(request, f"Deleted {name} and the items collected from it.")
        return redirect("source_list")
    items = source.items.count() if hasattr(source, "items") else 0
    return render(
        request, "newsroom/source_delete.html", {"source": source, "items": items}
    )


@login_required
@require_POST
def source_move(request: HttpRequest, pk: int) -> HttpResponse:
    source = _reader_source(request, pk)
    source.category = _reader_category(request, request.POST.get("category"))
    source.save(update_fields=["category"])
    where = source.category.name if source.category else "Uncategorised"
    messages.success(request, f"Moved {source.display_title} to {where}.")
    return redirect(_next(request, "category_list"))


@login_required
@require_POST
def source_move_many(request: HttpRequest) -> HttpResponse:
    ids = request.POST.getlist("sources")
    try:
        pks = {int(i) for i in ids}
    except ValueError:
        raise Http404("No such source") from None
    category = _reader_category(request, request.POST.get("category"))
    if not pks:
        messages.error(request, "Tick the sources to move first.")
        return redirect("source_list")
    mine = Source.objects.filter(reader=request.user, pk__in=pks)
    if mine.count() != len(pks):
        raise Http404("No such source")
    moved = mine.update(category=category)
    where = category.name if category else "Uncategorised"
    messages.success(
        request, f"Moved {moved} source{'s' if moved != 1 else ''} to {where}."
    )
    return redirect("source_list")
