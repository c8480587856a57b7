"""Admin: deliveries filtered by status, failed ones re-queued; items listed."""

from __future__ import annotations

import pytest
from django.urls import reverse

from fold_app.models import Delivery, Item
from fold_app.tests.feeds import RSS_TYPE, rss
from newsroom.sources.models import Source

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator_client(client, django_user_model):
    client.force_login(
        django_user_model.objects.create_superuser("op", password="x" * 16)
    )
    return client


@pytest.fixture
def deliveries(alice):
    source = Source.objects.create(reader=alice, url="https://ex.org/feed")
    from django.utils import timezone

    def make(status, body=b""):
        return Delivery.objects.create(
            source=source,
            received_at=timezone.now(),
            body=body if body is None else rss(),
            content_type=RSS_TYPE,
            status=status,
            parse_error="boom" if status == "failed" else "",
        )

    return {
        "failed": make("failed"),
        "parsed": make("parsed"),
        "pruned": make("failed", body=None),
    }


def test_deliveries_filter_by_status(operator_client, deliveries):
    url = reverse("admin:fold_app_delivery_changelist")
    page = operator_client.get(url, {"status__exact": "parsed"}).content.decode()
    assert deliveries["parsed"].pk in page and deliveries["failed"].pk not in page


def test_the_deliveries_list_and_page_never_read_a_body(operator_client, deliveries):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from fold_app.models import DeliveryBody

    table = DeliveryBody._meta.db_table
    with CaptureQueriesContext(connection) as queries:
        listed = operator_client.get(reverse("admin:fold_app_delivery_changelist"))
        shown = operator_client.get(
            reverse("admin:fold_app_delivery_change", args=[deliveries["parsed"].pk])
        )
    assert listed.status_code == shown.status_code == 200
    assert deliveries["parsed"].pk in listed.content.decode()
    assert not [q["sql"] for q in queries if f'{table}"."body' in q["sql"]]


def test_requeue_failed_puts_failed_deliveries_back_in_the_queue(
    operator_client, deliveries
):
    url = reverse("admin:fold_app_delivery_changelist")
    response = operator_client.post(
        url,
        {
            "action": "requeue_failed",
            "_selected_action": [d.pk for d in deliveries.values()],
        },
        follow=True,
    )
    assert "Re-queued 1 failed deliveries." in response.content.decode()
    statuses = {
        name: Delivery.objects.get(pk=d.pk).status for name, d in deliveries.items()
    }
    assert statuses == {"failed": "pending", "parsed": "parsed", "pruned": "failed"}
    assert Delivery.objects.get(pk=deliveries["failed"].pk).parse_error == ""


def test_items_are_listed(operator_client, alice):
    from django.utils import timezone

    source = Source.objects.create(reader=alice, url="https://ex.org/feed")
    now = timezone.now()
    Item.objects.create(
        source=source, key="k", title="Harbour vote", first_seen_at=now, updated_at=now
    )
    page = operator_client.get(
        reverse("admin:fold_app_item_changelist")
    ).content.decode()
    assert "Harbour vote" in page
