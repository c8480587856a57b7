from __future__ import annotations

from django.urls import reverse


def test_dashboard_requires_login(client, db):
    response = client.get(reverse("dashboard"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_dashboard_renders_for_reader(alice_client):
    response = alice_client.get(reverse("dashboard"))
    assert response.status_code == 200
    assert b"No sources yet" in response.content
    assert "Content-Security-Policy" in response.headers
