"""Who may see /healthz and /metrics: operators only.

Staff users through their session, or anyone presenting the bearer token
NEWSROOM_OPS_TOKEN (Prometheus, load balancers). Everyone else gets 404: the
pages do not admit they exist, and there is no login redirect to follow.
"""

from __future__ import annotations

import hmac

from django.conf import settings
from django.http import HttpRequest


def bearer_token(request: HttpRequest) -> str:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def is_operator(request: HttpRequest) -> bool:
    expected = settings.NEWSROOM_OPS_TOKEN
    given = bearer_token(request)
    if expected and given and hmac.compare_digest(given.encode(), expected.encode()):
        return True
    user = getattr(request, "user", None)
    return bool(user is not None and user.is_active and user.is_staff)
