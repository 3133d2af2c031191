"""The season flush on the keyspace page: typed confirmation, exact removal, audited."""

from __future__ import annotations

import re
from collections.abc import Callable

import redis
from django.test import Client

from booking.engine.bookings import booking_get
from booking.slots.bitmap import inventory_keys
from strongroom import keyspace as ks
from strongroom.decoders import text_stream
from tests.booking_support import product_keys
from tests.conftest import Someone
from tests.dashboard_support import World


def _inventory_keys(client: redis.Redis) -> list[str]:
    return [k for k in product_keys(client) if ks.BOOKING_INVENTORY.matches(k)]


def test_the_keyspace_page_lists_families_counts_and_the_registry(
    r: redis.Redis, world: World, staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    html = client_for(staff).get("/staff/keyspace/").content.decode()
    for name in ks.FAMILIES:
        assert f'data-family="{name}"' in html
    registered = inventory_keys(client=r)
    assert len(registered) == len(_inventory_keys(r)) > 0
    assert f"{len(registered)} inventory keys are registered." in html
    for entry in registered:
        assert entry.key in html
    assert "2026-12" in html


def test_a_wrong_confirmation_flushes_nothing(
    r: redis.Redis,
    world: World,
    staff: Someone,
    client_for: Callable[[Someone], Client],
) -> None:
    before = _inventory_keys(r)
    client = client_for(staff)
    for typed in ("", "2026-11", "2026-12x", "{2026-12}", "2026 12", "2026-12\n2027"):
        response = client.post("/staff/keyspace/flush/", {"confirmation": typed, "reason": "x"})
        assert response.status_code == 400
    assert "Type the season&#x27;s name, 2026-12, exactly." in response.content.decode()
    for reason in ("", "   ", "\u200b", "\u2060 \ufeff"):  # nothing that shows is no reason
        refused = client.post(
            "/staff/keyspace/flush/", {"confirmation": "2026-12", "reason": reason}
        )
        assert refused.status_code == 400
        assert "Give a reason: buyers and the audit log see it." in refused.content.decode()
    # Both problems at once, and the first field to mend takes the focus.
    both = client.post("/staff/keyspace/flush/", {"confirmation": "wrong", "reason": ""})
    page = both.content.decode()
    assert "Type the season&#x27;s name, 2026-12, exactly." in page and "Give a reason" in page
    assert re.search(r'<input[^>]*name="confirmation"[^>]*autofocus', page)
    assert _inventory_keys(r) == before
    assert all(b.status != "cancelled" for b in world.fresh(r) if b.id != world.cancelled_id)
    assert r.xlen(ks.STAFF_AUDIT.key()) == 0


def test_the_right_confirmation_removes_every_inventory_key_and_cancels_with_the_reason(
    r: redis.Redis,
    world: World,
    buyer: Someone,
    staff: Someone,
    client_for: Callable[[Someone], Client],
) -> None:
    confirmed = [b.id for b in world.fresh(r) if b.status == "confirmed"]
    others = [k for k in product_keys(r) if not ks.BOOKING_INVENTORY.matches(k)]
    client = client_for(staff)
    response = client.post(
        "/staff/keyspace/flush/", {"confirmation": "2026-12", "reason": "end of the trial"}
    )
    assert response.status_code == 302
    assert _inventory_keys(r) == []
    assert inventory_keys(client=r) == []
    for booking_id in confirmed:
        booking = booking_get(client=r, booking_id=booking_id)
        assert booking is not None and booking.status == "cancelled"
        assert booking.cancel_reason == "end of the trial"  # as typed: buyers read it
        assert booking.cancelled_by == str(staff.id)
    kept = booking_get(client=r, booking_id=world.cancelled_id)
    assert kept is not None and kept.cancel_reason == "double entry"
    # Only the inventory (and the rooms' registries and holds) went: records and indexes stay.
    assert all(r.exists(k) for k in others if not ks.BOOKING_REGISTRY.matches(k))
    ((_entry_id, fields),) = text_stream(r.xrange(ks.STAFF_AUDIT.key()))
    assert fields["kind"] == "season_flush" and fields["subject"] == "2026-12"
    assert fields["actor"] == str(staff.id) and "5 bookings" in fields["detail"]
    page = client.get(response["Location"]).content.decode()
    assert "5 bookings cancelled" in page
    log = client.get("/staff/audit/?kind=season_flush").content.decode()
    assert "end of the trial" in log
    chinese = client.get("/staff/audit/?kind=season_flush", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert "end of the trial (" in chinese.content.decode()
    assert "5 个预订" in chinese.content.decode()
