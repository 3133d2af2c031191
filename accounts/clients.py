"""Which client a request comes from, for the throttles (login, sign-up, mail, the pickup kiosk)
and anonymous visitors."""

from __future__ import annotations

import ipaddress

from django.conf import settings
from django.http import HttpRequest

_MAX_ADDRESS = 100
# An IPv6 host is given a whole /64 (and can take any address in it at will): the throttles
# count the network, or one host would be as many clients as it likes.
_IPV6_PREFIX = 64


def client_address(request: HttpRequest) -> str:
    """The client's address: REMOTE_ADDR, or behind our proxy the entry it appended last to
    X-Forwarded-For (without this, every visitor would share the proxy's address and five wrong
    passwords from anyone would lock a name for everyone). An IPv6 address stands for its /64."""
    address = request.META.get("REMOTE_ADDR", "") or "unknown"
    if settings.STRONGROOM_CLIENT_FROM_FORWARDED_FOR:
        forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
        last = forwarded.rsplit(",", 1)[-1].strip()
        if last:
            address = last[:_MAX_ADDRESS]
    return _client_of(address)


def _client_of(address: str) -> str:
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return address  # not an address (a proxy's odd entry): taken as it is
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.IPv6Network((parsed, _IPV6_PREFIX), strict=False))
    return str(parsed)
