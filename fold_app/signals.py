"""Signals other parts listen to, so fold_app never imports them."""

from __future__ import annotations

from django.dispatch import Signal

# Sent after a delivery's fold has committed (parsed or failed), in the process
# that folded it. kwargs: delivery (Delivery), items (int), new_items (int).
delivery_folded = Signal()
