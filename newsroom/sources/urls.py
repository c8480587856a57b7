from __future__ import annotations

from django.urls import path

from newsroom.sources import views

urlpatterns = [
    path("", views.source_list, name="source_list"),
    path("<int:pk>/", views.source_edit, name="source_edit"),
    path("categories/", views.category_list, name="category_list"),
]
