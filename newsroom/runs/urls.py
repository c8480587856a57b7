from __future__ import annotations

from django.urls import path

from newsroom.runs import views

urlpatterns = [
    path("", views.run_list, name="run_list"),
    path("now/", views.run_now, name="run_now"),
    path("schedule/", views.run_schedule, name="run_schedule"),
    path("<int:pk>/", views.run_detail, name="run_detail"),
    path("<int:pk>/resume/", views.run_resume, name="run_resume"),
]
