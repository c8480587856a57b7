from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from newsroom import views

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    # No password reset by email: Newsroom sends no mail. Operators reset
    # passwords with `manage.py changepassword` or in the admin.
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path(
        "accounts/password/",
        auth_views.PasswordChangeView.as_view(),
        name="password_change",
    ),
    path(
        "accounts/password/done/",
        auth_views.PasswordChangeDoneView.as_view(),
        name="password_change_done",
    ),
    path("admin/", admin.site.urls),
    path("sources/", include("newsroom.sources.urls")),
    path("runs/", include("newsroom.runs.urls")),
    path("briefings/", include("newsroom.briefing.urls")),
    path("sessions/", include("sessions_app.urls")),
    path("", include("newsroom.ops.urls")),
]
