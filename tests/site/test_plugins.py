"""What the apps add to each other goes through one mechanism (strongroom/plugins.py): each app
plugs into the lower modules' points from its AppConfig.ready, and nothing registers itself by
being imported, nor through a signal."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
import redis
from django.test import Client

from accounts import extensions
from booking.domain.rules import hold_new_id
from booking.engine.bookings import hold_get
from booking.engine.holds import booking_hold
from strongroom import audit, keeper, outbox
from strongroom.plugins import Point
from tests.booking_support import request
from tests.conftest import Someone

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("strongroom", "accounts", "booking", "catalog", "dashboard")


def test_every_point_holds_what_the_apps_declare() -> None:
    kinds = {k.kind for k in outbox.RENDERERS}
    assert kinds == {
        "confirm", "cancel", "freed", "moved", "remind", "verify", "reset", "password_changed",
        "email_changed", "email_change_asked", "cancel_to", "account_deleted",
    }  # fmt: skip
    assert {"claim", "cancel", "book_add"} <= set(audit.audit_kinds())
    assert "claim" in audit.audit_kinds("booking") and "claim" not in audit.audit_kinds("staff")
    assert len(list(outbox.SENDER_HOOKS)) == 3  # the waits, the moves' recovery, reminders
    assert len(list(keeper.KEEPER_TASKS)) == 1
    assert len(list(keeper.FAILOVER_REPAIRS)) == 2
    assert len(list(extensions.ACCOUNT_PARTS)) == 1
    assert len(list(extensions.PERSON_FORGETTERS)) == 1
    assert len(list(extensions.SIGNED_OUT)) == 1


def test_apps_plug_in_only_from_their_ready_never_by_import_or_signal() -> None:
    plugged_elsewhere, registering = [], []
    for package in PRODUCT:
        for path in sorted((ROOT / package).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            name = str(path.relative_to(ROOT))
            if ".plug(" in text and path.name != "apps.py":
                plugged_elsewhere.append(name)
            if re.search(
                r"^@(renderer|sender_hook|account_part|person_forgetter|keeper_task|failover_repair)\b",
                text,
                re.M,
            ):
                registering.append(name)
            # Django's own `setting_changed` (sent when a test overrides a setting) may drop a
            # value kept from the settings; no app signals another.
            if re.search(r"\bSignal\(|(?<!setting_changed)\.connect\(", text):
                registering.append(name)
            if "noqa: F401" in text and path.name == "apps.py":
                registering.append(name)  # a module imported for its side effects
    assert plugged_elsewhere == []
    assert registering == []


def test_a_key_is_plugged_once_and_plugging_again_changes_nothing() -> None:
    point: Point[tuple[str, int]] = Point("test", key=lambda item: item[0])
    point.plug(("a", 1), ("b", 2))
    point.plug(("a", 1))
    assert list(point) == [("a", 1), ("b", 2)]
    assert point.get("b") == ("b", 2)
    with pytest.raises(ValueError, match="'a' is taken"):
        point.plug(("a", 3))


def test_signing_out_gives_the_buyers_hold_back_through_the_plugged_hook(
    r: redis.Redis, buyer: Someone, client_for: Callable[[Someone], Client]
) -> None:
    hold_id = hold_new_id(room=7)
    held = booking_hold(
        client=r, owner_id=str(buyer.id), request=request("A", dates=(9,)), hold_id=hold_id
    )
    assert held.ok
    client = client_for(buyer)
    response = client.post("/accounts/logout/")
    assert response.status_code in (200, 302, 303)
    assert hold_get(client=r, hold_id=hold_id) is None
