"""OPML upload, download, and the one-click starter list."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from newsroom.sources.forms import OpmlUploadForm
from newsroom.sources.opml import MAX_BYTES, OpmlError
from newsroom.sources.opml_io import export_opml, import_opml, import_starter


@login_required
def opml_import(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        form = OpmlUploadForm(request.POST, request.FILES)
    else:
        form = OpmlUploadForm()
    if form.is_bound and form.is_valid():
        upload = form.cleaned_data["file"]
        if upload.size > MAX_BYTES:
            form.add_error(
                "file",
                f"The file is {upload.size / 1024 / 1024:.1f} MB; OPML files up to "
                f"{MAX_BYTES // 1024 // 1024} MB can be imported. Nothing was imported.",
            )
        else:
            try:
                result = import_opml(request.user, upload.read())
            except OpmlError as e:
                form.add_error("file", f"{e} Nothing was imported.")
            else:
                messages.success(request, result.summary())
                return redirect("source_list")
    status = 400 if request.method == "POST" else 200
    return render(request, "newsroom/opml_import.html", {"form": form}, status=status)


@login_required
def opml_export(request: HttpRequest) -> HttpResponse:
    body = export_opml(request.user)
    name = (
        f"newsroom-{request.user.get_username()}-{timezone.localdate():%Y-%m-%d}.opml"
    )
    response = HttpResponse(body, content_type="text/x-opml; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@login_required
@require_POST
def starter_import(request: HttpRequest) -> HttpResponse:
    result = import_starter(request.user)
    if result.added:
        messages.success(request, f"Starter list: {result.summary()}")
    else:
        messages.info(request, "You already have every source of the starter list.")
    return redirect(
        request.POST.get("next") == "dashboard" and "dashboard" or "source_list"
    )
