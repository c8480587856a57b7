from __future__ import annotations

from django.urls import path

from newsroom.ops import views

urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
    path("metrics", views.metrics_view, name="metrics"),
]
