"""/healthz and /metrics are for operators only; everyone else gets 404."""

from __future__ import annotations

import pytest

from newsroom.ops.tests.conftest import TOKEN

pytestmark = pytest.mark.django_db

PAGES = ["/healthz", "/metrics"]


@pytest.mark.parametrize("url", PAGES)
def test_anonymous_visitors_get_404_not_a_login_redirect(client, url):
    assert client.get(url).status_code == 404


@pytest.mark.parametrize("url", PAGES)
def test_a_reader_who_is_not_staff_gets_404(client, make_reader, url):
    client.force_login(make_reader("rita"))
    assert client.get(url).status_code == 404


@pytest.mark.parametrize("url", PAGES)
def test_staff_see_the_page(operator_client, all_roles_beating, url):
    assert operator_client.get(url).status_code == 200


@pytest.mark.parametrize("url", PAGES)
def test_the_bearer_token_opens_the_page_without_a_session(
    client, all_roles_beating, url
):
    response = client.get(url, headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200


@pytest.mark.parametrize("url", PAGES)
@pytest.mark.parametrize(
    "header",
    [f"Bearer {TOKEN}x", f"Bearer {TOKEN[:-1]}", f"Basic {TOKEN}", "Bearer ", TOKEN],
)
def test_a_wrong_token_gets_404(client, url, header):
    assert client.get(url, headers={"Authorization": header}).status_code == 404


@pytest.mark.parametrize("url", PAGES)
def test_without_a_configured_token_no_bearer_is_accepted(client, settings, url):
    settings.NEWSROOM_OPS_TOKEN = ""
    response = client.get(url, headers={"Authorization": "Bearer "})
    assert response.status_code == 404


def test_an_inactive_staff_user_is_not_an_operator(client, operator):
    operator.is_active = False
    operator.save()
    client.force_login(operator)
    assert client.get("/metrics").status_code == 404
