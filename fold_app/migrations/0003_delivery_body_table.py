"""Delivery bodies move to a table of their own (DeliveryBody), so the status
updates of a fold rewrite a small row, not the row and its kilobytes of body.

Existing bodies are copied by one INSERT ... SELECT (no row passes through
Python); the delivery rows themselves keep their ids, journal times and
outcomes. A pruned delivery (body NULL) gets no body row. Reversible: going
back copies the bodies into the column again.
"""

import django.db.models.deletion
from django.db import migrations, models


def _tables(apps, schema_editor):
    q = schema_editor.quote_name
    delivery = apps.get_model("fold_app", "Delivery")._meta.db_table
    body = apps.get_model("fold_app", "DeliveryBody")._meta.db_table
    return q(delivery), q(body), q


def copy_bodies(apps, schema_editor):
    delivery, body, q = _tables(apps, schema_editor)
    schema_editor.execute(
        f"INSERT INTO {body} ({q('delivery_id')}, {q('body')}) "
        f"SELECT {q('id')}, {q('body')} FROM {delivery} WHERE {q('body')} IS NOT NULL"
    )


def copy_bodies_back(apps, schema_editor):
    delivery, body, q = _tables(apps, schema_editor)
    schema_editor.execute(
        f"UPDATE {delivery} SET {q('body')} = (SELECT b.{q('body')} FROM {body} b "
        f"WHERE b.{q('delivery_id')} = {delivery}.{q('id')})"
    )


class Migration(migrations.Migration):
    dependencies = [
        ("fold_app", "0002_fewer_item_indexes"),
    ]

    operations = [
        migrations.CreateModel(
            name="DeliveryBody",
            fields=[
                (
                    "delivery",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="payload",
                        serialize=False,
                        to="fold_app.delivery",
                    ),
                ),
                ("body", models.BinaryField()),
            ],
        ),
        migrations.RunPython(copy_bodies, copy_bodies_back, elidable=False),
        migrations.RemoveField(
            model_name="delivery",
            name="body",
        ),
    ]
