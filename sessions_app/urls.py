from __future__ import annotations

from django.urls import path

from sessions_app import api, views

app_name = "sessions"

urlpatterns = [
    path("", views.session_list, name="list"),
    path("open/", views.session_open, name="open"),
    path("secrets/", views.secret_list, name="secrets"),
    path("secrets/<slug:name>/delete/", views.secret_delete, name="secret_delete"),
    path("api/open", api.api_open, name="api_open"),
    path("api/<str:sid>", api.api_state, name="api_state"),
    path("api/<str:sid>/screenshot", api.api_screenshot, name="api_screenshot"),
    path("api/<str:sid>/close", api.api_close, name="api_close"),
    path("api/<str:sid>/<str:action>", api.api_act, name="api_act"),
    path("<str:sid>/", views.session_interact, name="interact"),
    path("<str:sid>/act/", views.session_act, name="act"),
    path("<str:sid>/screenshot.png", views.session_screenshot, name="screenshot"),
    path("<str:sid>/close/", views.session_close, name="close"),
]
