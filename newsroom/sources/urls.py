from __future__ import annotations

from django.urls import path

from newsroom.sources import category_views, opml_views, views

urlpatterns = [
    path("", views.source_list, name="source_list"),
    path("add/", views.source_add, name="source_add"),
    path("move/", views.source_move_many, name="source_move_many"),
    path("<int:pk>/", views.source_edit, name="source_edit"),
    path("<int:pk>/delete/", views.source_delete, name="source_delete"),
    path("<int:pk>/move/", views.source_move, name="source_move"),
    path("categories/", category_views.category_list, name="category_list"),
    path("categories/<int:pk>/", category_views.category_edit, name="category_edit"),
    path(
        "categories/<int:pk>/delete/",
        category_views.category_delete,
        name="category_delete",
    ),
    path(
        "categories/<int:pk>/up/",
        category_views.category_move,
        {"direction": "up"},
        name="category_up",
    ),
    path(
        "categories/<int:pk>/down/",
        category_views.category_move,
        {"direction": "down"},
        name="category_down",
    ),
    path("opml/import/", opml_views.opml_import, name="opml_import"),
    path("opml/export/", opml_views.opml_export, name="opml_export"),
    path("opml/starter/", opml_views.starter_import, name="starter_import"),
]
