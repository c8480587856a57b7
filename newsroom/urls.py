from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from newsroom import views

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("admin/", admin.site.urls),
    path("sources/", include("newsroom.sources.urls")),
    path("runs/", include("newsroom.runs.urls")),
    path("sessions/", include("sessions_app.urls")),
]
