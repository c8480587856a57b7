from __future__ import annotations

from django.urls import path

from newsroom.runs import views

urlpatterns = [
    path("", views.run_list, name="run_list"),
    path("<int:pk>/", views.run_detail, name="run_detail"),
]
