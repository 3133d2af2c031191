"""How the audit log's entries read to staff: each kind's name, and the details the store's
functions write in English (a failover repair's account, a flush's counts, staff acting for a
buyer) in the staff member's language."""

from __future__ import annotations

import re
from typing import Any

from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

# Details the store's functions write in English (a staff reason is shown as typed).
_FIXED_DETAILS = {"wrong code": _("wrong code"), "account deleted": _("account deleted"),
                  "sent again": _("sent again")}  # fmt: skip
# booking.engine.acting: the claim's own entry ("...: B 2026-12-12"), or (before) one of its own
_BOOKED_FOR = re.compile(
    r"booked by staff for (?P<name>.+?)(?:: (?P<what>[ABC] [-0-9,]+))?", re.DOTALL
)
_FLUSH_DETAIL = re.compile(r"(?P<reason>.*?) ?\((?P<keys>\d+) keys, (?P<bookings>\d+) bookings\)")
_MISSES_DETAIL = re.compile(
    r"(?P<count>\d+) wrong codes from (?P<client>\S+) within (?P<minutes>\d+) min"
)
# booking/lua/booking/move_rooms.lua: a move's entry names the booking's id in its other room
_MOVE_DETAIL = re.compile(r"(?P<way>from|to) (?P<id>\S+)")
# booking.engine.indexes_repair's account of a repair after a failover
_REPAIR_DETAIL = re.compile(r"bookings=(?P<bookings>\d+) drained=(?P<drained>\d+)")
_REPAIR_WAITS = re.compile(r"waits=(?P<waits>\d+)")
# booking.engine.window: "rolling 20 days -> fixed 2027-06-01..2027-06-30: a reason"
_WINDOW_WORDS = r"rolling \d+ days|fixed [-\d]+\.\.[-\d]+"
_WINDOW_DETAIL = re.compile(
    rf"(?P<before>{_WINDOW_WORDS}) -> (?P<after>{_WINDOW_WORDS})(?:: (?P<reason>.*))?", re.DOTALL
)
_WINDOW_PART = re.compile(r"rolling (?P<days>\d+) days|fixed (?P<first>[-\d]+)\.\.(?P<last>[-\d]+)")


def _window_part(words: str) -> str:
    """One window in the audit's words (booking.engine.window.window_describe), translated."""
    part = _WINDOW_PART.fullmatch(words)
    if part is None:
        return words
    if part["days"] is not None:
        days = int(part["days"])
        return ngettext("rolling %(days)s day", "rolling %(days)s days", days) % {"days": days}
    return str(_("fixed %(first)s to %(last)s") % {"first": part["first"], "last": part["last"]})


def _window_detail(detail: str) -> Any:
    """A change of the sales window (before -> after: the reason as typed) in words."""
    change = _WINDOW_DETAIL.fullmatch(detail)
    if change is None:
        return detail
    said = f"{_window_part(change['before'])} -> {_window_part(change['after'])}"
    return f"{said}: {change['reason']}" if change["reason"] else said


def _repair_part(part: str) -> Any:
    """One repair's account (booking.engine.indexes_repair, booking.engine.waits) in words."""
    indexes = _REPAIR_DETAIL.fullmatch(part)
    if indexes is not None:
        return _(
            "index entries of %(bookings)s bookings written again from their rooms; "
            "%(drained)s bookings not yet indexed drained"
        ) % {"bookings": indexes["bookings"], "drained": indexes["drained"]}
    waits = _REPAIR_WAITS.fullmatch(part)
    if waits is not None:
        return _("%(waits)s waits listed again for their buyers") % {"waits": waits["waits"]}
    return part


def detail_label(kind: str, detail: str) -> Any:
    """An audit entry's detail in the reader's language where the site wrote it."""
    fixed = _FIXED_DETAILS.get(detail)
    if fixed is not None:
        return fixed
    booked_for = _BOOKED_FOR.fullmatch(detail) if kind == "claim" else None
    if booked_for is not None:
        said = _("booked by staff for %(name)s") % {"name": booked_for["name"]}
        return f"{said}: {booked_for['what']}" if booked_for["what"] else said
    misses = _MISSES_DETAIL.fullmatch(detail) if kind == "pickup_failed" else None
    if misses is not None:
        return (
            _("%(count)s wrong codes from %(client)s within %(minutes)s min") % misses.groupdict()
        )
    if kind == "sales_window":
        return _window_detail(detail)
    moved = _MOVE_DETAIL.fullmatch(detail) if kind == "move" else None
    if moved is not None:  # the booking's id in its other room
        words = _("from %(id)s") if moved["way"] == "from" else _("to %(id)s")
        return words % {"id": moved["id"]}
    if kind == "failover_repair":
        return "; ".join(str(_repair_part(part)) for part in detail.split("; "))
    flush = _FLUSH_DETAIL.fullmatch(detail) if kind in ("flush", "season_flush") else None
    if flush is None:
        return detail
    counts = _("%(keys)s keys, %(bookings)s bookings") % {
        "keys": flush["keys"], "bookings": flush["bookings"]
    }  # fmt: skip
    return f"{flush['reason']} ({counts})" if flush["reason"] else counts


def kind_label(kind: str) -> Any:
    """The shown name of an audit kind."""
    labels = {
        "claim": _("claim"), "cancel": _("cancel"), "pickup": _("pickup"),
        "pickup_failed": _("failed pickup"), "flush": _("room flush"), "hold": _("hold"),
        "move": _("move"), "receipt": _("receipt sent again"), "handover": _("handed over"),
        "staff_grant": _("staff granted"), "staff_revoke": _("staff revoked"),
        "person_delete": _("person deleted"),
        "season_flush": _("season flush"), "book_add": _("book added"),
        "book_edit": _("book edited"), "book_delete": _("book deleted"),
        "sales_window": _("sales window changed"),
        "closure_add": _("closed"), "closure_remove": _("reopened"),
        "failover_repair": _("repair after a failover"),
    }  # fmt: skip
    return labels.get(kind, kind)
