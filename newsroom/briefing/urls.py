from __future__ import annotations

from django.urls import path

from newsroom.briefing import views

urlpatterns = [
    path("", views.briefing_list, name="briefing_list"),
    path("latest/", views.briefing_latest, name="briefing_latest"),
    path("write/", views.briefing_write, name="briefing_write"),
    path("day/<str:day>/", views.briefing_day, name="briefing_day"),
    path("<int:pk>/", views.briefing_detail, name="briefing_detail"),
    path("<int:pk>.md", views.briefing_markdown, name="briefing_markdown"),
]
