"""Which client a request comes from, for the login throttle and anonymous visitors."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest

_MAX_ADDRESS = 100


def client_address(request: HttpRequest) -> str:
    """The client's address: REMOTE_ADDR, or behind our proxy the entry it appended last to
    X-Forwarded-For (without this, every visitor would share the proxy's address and five wrong
    passwords from anyone would lock a name for everyone)."""
    if settings.STRONGROOM_CLIENT_FROM_FORWARDED_FOR:
        forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
        last = forwarded.rsplit(",", 1)[-1].strip()
        if last:
            return last[:_MAX_ADDRESS]
    return request.META.get("REMOTE_ADDR", "") or "unknown"
