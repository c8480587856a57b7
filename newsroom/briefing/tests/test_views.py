"""The briefing page, the archive, the Markdown export and the write button."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from newsroom.briefing.models import Briefing
from newsroom.briefing.service import write_briefing
from newsroom.briefing.tests.conftest import DAY, END_OF_DAY

pytestmark = pytest.mark.django_db


@pytest.fixture
def briefing(alice, news_day, embedder):
    return write_briefing(alice, DAY, embedder=embedder, now=END_OF_DAY)


def test_the_page_shows_sections_claims_linked_to_items_and_the_graph(
    alice_client, briefing, news_day
):
    response = alice_client.get(briefing.get_absolute_url())
    assert response.status_code == 200
    page = response.content.decode()
    for heading in ("Overview", "Economics", "How it all connects", "Outlook"):
        assert f"<h2>{heading}</h2>" in page
    # Claims link to the items behind them.
    for item in news_day["fed"]:
        assert f'href="{item.url}"' in page
    # The graph: inline SVG whose nodes link to the events' anchors on the page.
    assert '<svg class="event-graph"' in page
    for node in briefing.graph["nodes"]:
        assert f'href="#event-{node["key"]}"' in page
        assert f'id="event-{node["key"]}"' in page
    assert "Both involve Japan" in page


def test_the_page_obeys_the_content_security_policy(alice_client, briefing):
    response = alice_client.get(briefing.get_absolute_url())
    page = response.content.decode()
    assert "style-src 'self'" in response["Content-Security-Policy"]
    assert not re.search(r"\sstyle=", page)
    assert "<style" not in page
    assert not re.search(r"<script(?![^>]*\bsrc=)", page)


def test_another_readers_briefing_is_not_found(client, bob, briefing):
    client.force_login(bob)
    assert client.get(briefing.get_absolute_url()).status_code == 404
    assert (
        client.get(reverse("briefing_markdown", args=[briefing.pk])).status_code == 404
    )
    assert (
        client.get(reverse("briefing_day", args=[DAY.isoformat()])).status_code == 404
    )
    assert (
        DAY.strftime("%B") not in client.get(reverse("briefing_list")).content.decode()
    )


def test_the_archive_lists_days_with_their_newest_briefing(
    alice, alice_client, briefing, embedder
):
    newer = write_briefing(alice, DAY, embedder=embedder, now=END_OF_DAY)
    page = alice_client.get(reverse("briefing_list")).content.decode()
    assert "Monday 30 November 2026" in page
    assert reverse("briefing_day", args=[DAY.isoformat()]) in page
    day_page = alice_client.get(reverse("briefing_day", args=[DAY.isoformat()]))
    assert day_page.context["briefing"] == newer
    assert (
        alice_client.get(reverse("briefing_day", args=["2026-13-01"])).status_code
        == 404
    )
    assert alice_client.get(reverse("briefing_latest")).url == newer.get_absolute_url()


def test_the_markdown_export_has_sections_and_numbered_sources(
    alice_client, briefing, news_day
):
    response = alice_client.get(reverse("briefing_markdown", args=[briefing.pk]))
    assert response["Content-Type"].startswith("text/markdown")
    assert "attachment" in response["Content-Disposition"]
    text = response.content.decode()
    assert text.startswith("# Briefing for Monday 30 November 2026")
    assert "## Overview" in text and "## Sources" in text
    assert f"]({news_day['fed'][0].url})" in text
    cited = {int(n) for n in re.findall(r"\[(\d+)\]", text)}
    listed = {int(n) for n in re.findall(r"^(\d+)\. \[", text, re.M)}
    assert cited == listed


def test_write_briefing_now_writes_and_opens_it(alice, alice_client, news_day):
    response = alice_client.post(reverse("briefing_write"), {"day": DAY.isoformat()})
    briefing = Briefing.objects.get(reader=alice)
    assert response.status_code == 302 and response.url == briefing.get_absolute_url()
    assert briefing.day == DAY and briefing.events


def test_write_briefing_now_rejects_a_bad_day_and_get(alice, alice_client):
    response = alice_client.post(
        reverse("briefing_write"), {"day": "yesterday"}, follow=True
    )
    assert "is not a date" in response.content.decode()
    assert alice_client.get(reverse("briefing_write")).status_code == 405
    assert not Briefing.objects.exists()


def test_the_admin_lists_briefings(admin_client, briefing):
    response = admin_client.get(reverse("admin:newsroom_briefing_changelist"))
    assert response.status_code == 200
    assert "alice" in response.content.decode()


def test_a_day_without_news_shows_an_empty_briefing_page(alice, alice_client, embedder):
    briefing = write_briefing(alice, DAY, embedder=embedder, now=END_OF_DAY)
    page = alice_client.get(briefing.get_absolute_url()).content.decode()
    assert "Nothing to brief" in page
    assert "event-graph" not in page
