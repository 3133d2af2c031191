"""Every format that crosses the Lua/Python boundary is declared once on each side: the booking
library's `local NAME = {...}` lists (booking/lua/booking/common.lua) and booking/domain/formats.py.
These tests check that the two declarations agree, that what the functions really write reads
back through the Python declaration, that the keyspace documents the formats as declared, and
that each check notices when one side drifts."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis

from accounts.selectors import MailTarget
from booking.domain import formats
from booking.domain.keys import RoomKeys
from booking.domain.records import booking_from_hash
from booking.domain.rules import check_owner_id
from booking.engine.cancel import booking_cancel
from booking.engine.moves import booking_move
from booking.engine.owners import owner_forget
from booking.engine.waits import Wait, notice_of, wait_join, wait_of
from strongroom import keyspace as ks
from strongroom.decoders import text_hash, text_list, text_stream
from strongroom.lua_sources import library_text
from tests.booking_support import BUYER, NOW, SECOND_BUYER, STAFF, claim, day, request

ROOT = Path(__file__).resolve().parents[3]
LUA = library_text(ROOT / "booking" / "lua" / "booking")


def lua_lists(text: str) -> dict[str, tuple[str, ...]]:
    """The `local NAME = {'a', 'b'}` lists of Lua text (a list may span lines)."""
    return {
        m.group(1): tuple(re.findall(r"'([a-z_]+)'", m.group(2)))
        for m in re.finditer(r"^local ([A-Z_]+) = \{([^}]*)\}", text, re.M)
    }


def format_mismatches(lua: str, declared: dict[str, tuple[str, ...]]) -> list[str]:
    """Where the Lua's lists differ from the Python declarations ([] when they agree)."""
    lists = lua_lists(lua)
    return [
        f"{name}: Lua {lists.get(name)}, Python {names}"
        for name, names in declared.items()
        if lists.get(name) != names
    ]


def test_every_format_is_declared_alike_on_both_sides() -> None:
    assert format_mismatches(LUA, formats.DECLARED) == []


@pytest.mark.parametrize("name", formats.DECLARED)
def test_a_format_that_drifts_on_either_side_is_noticed(name: str) -> None:
    names = formats.DECLARED[name]
    python_drifted = {**formats.DECLARED, name: (*names[:-1], "renamed")}
    assert format_mismatches(LUA, python_drifted) != []
    # The same list in a copy of the Lua, its last field renamed.
    declaration = re.search(rf"^local {name} = \{{[^}}]*\}}", LUA, re.M)
    assert declaration is not None
    drifted = declaration.group(0).replace(f"'{names[-1]}'", "'renamed'")
    assert format_mismatches(LUA.replace(declaration.group(0), drifted), formats.DECLARED) != []


def test_the_lua_builds_and_reads_the_formats_through_their_declarations() -> None:
    # No format is written out by hand: the lists are used, and no '|' joins values but in
    # `outbox_entry` (the kind) and the pickup's attempt marker (which Python never reads).
    for name in formats.DECLARED:
        assert len(re.findall(rf"\b{name}\b", LUA)) > 1, f"{name} is declared but not used"
    by_hand = re.findall(r"(\w+(?:\[1\])?) \.\. '\|' \.\.", LUA)
    assert set(by_hand) == {"format[1]", "attempt"}


class Reading(dict[str, str]):
    """A record's hash that notes which fields its reader asks for."""

    def __init__(self, data: dict[str, str]) -> None:
        super().__init__(data)
        self.asked: set[str] = set()

    def __getitem__(self, key: str) -> str:
        self.asked.add(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self.asked.add(key)
        return super().get(key, default)


def record_mismatches(written: set[str], asked: set[str], declared: tuple[str, ...]) -> list[str]:
    """Fields the claim writes that are not declared, and fields Python reads that no function
    declares."""
    known = set(declared) | set(formats.RECORD_LATER_FIELDS)
    return sorted((written - set(declared)) | (asked - known))


def test_the_record_the_claim_writes_has_the_declared_fields_and_python_reads_only_those(
    r: redis.Redis,
) -> None:
    made = claim(r, request("C", hour_start=8, hour_end=10, boxes=(3,))).booking
    assert made is not None
    stored = text_hash(r.hgetall(RoomKeys(made.room).record(made.id)))
    assert list(stored) == list(formats.RECORD_FIELDS)
    booking_cancel(client=r, booking_id=made.id, actor_id=STAFF, actor_is_staff=True, now=NOW)
    reading = Reading(text_hash(r.hgetall(RoomKeys(made.room).record(made.id))))
    assert booking_from_hash(reading) is not None
    assert set(reading) <= set(formats.RECORD_FIELDS) | set(formats.RECORD_LATER_FIELDS)
    assert record_mismatches(set(stored), reading.asked, formats.RECORD_FIELDS) == []
    # A Python declaration that lost a field the Lua writes (and Python reads) is noticed.
    drifted = tuple(name for name in formats.RECORD_FIELDS if name != "ref")
    assert record_mismatches(set(stored), reading.asked, drifted) == ["ref"]


def _outbox(r: redis.Redis, room: int) -> list[str]:
    return [fields["m"] for _, fields in text_stream(r.xrange(RoomKeys(room).outbox))]


def test_the_outbox_entries_the_functions_write_read_back_by_their_declared_names(
    r: redis.Redis,
) -> None:
    made = claim(r, request("A", dates=(5,))).booking
    assert made is not None
    wait = Wait(7, "A", day(5))
    assert wait_join(client=r, owner_id=SECOND_BUYER, wait=wait, now=NOW) == "ok"
    booking_cancel(client=r, booking_id=made.id, actor_id=BUYER, actor_is_staff=False, now=NOW)
    moving = claim(r, request("A", dates=(6,))).booking
    assert moving is not None
    moved = booking_move(
        client=r,
        booking_id=moving.id,
        request=request("A", dates=(8,)),
        actor_id=BUYER,
        actor_is_staff=False,
        now=NOW,
    )
    assert moved.outcome == "moved"
    gone = claim(r, request("A", dates=(7,)), owner="77").booking
    assert gone is not None
    target = MailTarget(77, "Gone", "gone@example.test", "zh-hans")
    assert owner_forget(client=r, owner_id="77", now=NOW, mail_to=target) == 1
    every = [m.split("|") for m in _outbox(r, 7)]
    # One entry of each kind, but the receipts: the one of the booking that was cancelled.
    entries = {kind: args for kind, *args in every if kind != "confirm" or args[0] == made.id}
    assert set(entries) == set(formats.OUTBOX_ENTRIES)
    for kind, args in entries.items():
        assert len(args) == len(formats.OUTBOX_ENTRIES[kind]) - 1, kind
    assert formats.outbox_fields("confirm", entries["confirm"]) == {
        "booking_id": made.id,
        "owner": BUYER,
    }
    assert formats.outbox_fields("cancel", entries["cancel"]) == {"booking_id": made.id}
    freed = formats.outbox_fields("freed", entries["freed"])
    assert freed["room"] == "007"
    assert wait_of(7, formats.fields_join(freed, formats.WAIT_FIELDS)) == (SECOND_BUYER, wait)
    assert formats.outbox_fields("moved", entries["moved"]) == {
        "booking_id": moving.id,
        "sequence": "1",
    }
    assert formats.outbox_fields("cancel_to", entries["cancel_to"]) == {
        "booking_id": gone.id,
        "lang": "zh-hans",
        "name": "Gone",
        "address": "gone@example.test",
        "by": "",  # the buyer's own deletion
    }


def test_a_wait_and_its_notice_read_back_by_their_declared_names(r: redis.Redis) -> None:
    made = claim(r, request("B", dates=(6,), hour_start=9, hour_end=11)).booking
    assert made is not None
    wait = Wait(7, "B", day(6), (9, 11))
    assert wait_join(client=r, owner_id=SECOND_BUYER, wait=wait, now=NOW) == "ok"
    (member,) = text_list(r.zrange(RoomKeys(7).waits, 0, -1))
    assert wait_of(7, member) == (SECOND_BUYER, wait)
    booking_cancel(client=r, booking_id=made.id, actor_id=STAFF, actor_is_staff=True, now=NOW)
    value = r.hget(RoomKeys(7).wait_notices, member)
    assert isinstance(value, str)
    fields = formats.fields_split(value, formats.NOTICE_FIELDS)
    notice = notice_of(value)
    assert notice is not None and notice.hold_id and notice.hold_id == fields["hold_id"]
    assert fields["room"] == "007"
    assert notice.expires_at is not None and notice.told_at is not None


def test_a_taken_entry_reads_back_by_its_declared_names(r: redis.Redis) -> None:
    assert claim(r, request("C", hour_start=8, hour_end=10, boxes=(3, 4))).ok
    refused = claim(r, request("C", hour_start=9, hour_end=10, boxes=(4,)), owner=SECOND_BUYER)
    assert refused.taken and {(s.hour, s.box, s.held) for s in refused.taken} == {(9, 4, False)}


DOCUMENTED: list[tuple[str, Callable[[], str], tuple[str, ...], str, str]] = [
    ("wait", lambda: ks.BOOKING_WAITS.holds, formats.WAIT_FIELDS, "|", ""),
    ("notice", lambda: ks.BOOKING_WAIT_NOTICES.holds, formats.NOTICE_FIELDS, "|", ""),
    *(
        (kind, lambda: ks.BOOKING_OUTBOX.holds, entry[1:], "|", kind)
        for kind, entry in formats.OUTBOX_ENTRIES.items()
    ),
    ("hold", lambda: ks.BOOKING_HOLDS.holds, formats.HOLD_FIELDS, "|", ""),
]


@pytest.mark.parametrize(
    ("name", "doc", "names", "sep", "kind"), DOCUMENTED, ids=[d[0] for d in DOCUMENTED]
)
def test_the_keyspace_documents_each_format_as_declared(
    name: str, doc: Callable[[], str], names: tuple[str, ...], sep: str, kind: str
) -> None:
    assert formats.format_shown(names, sep, kind) in str(doc())
    assert formats.format_shown((*names, "more"), sep, kind) not in str(doc())


def test_the_pending_owner_and_the_grants_clock_margin_are_the_same_on_both_sides() -> None:
    from booking.engine.priority import PRIORITY_CLOCK_MARGIN_MS

    pending = re.search(r"^local PRIORITY_PENDING = '([^']*)'", LUA, re.M)
    margin = re.search(r"^local PRIORITY_CLOCK_MARGIN_MS = (\d+)", LUA, re.M)
    assert pending is not None and pending.group(1) == formats.PRIORITY_PENDING
    assert margin is not None and int(margin.group(1)) == PRIORITY_CLOCK_MARGIN_MS
    # No owner id can look like a pending one: a pending hold blocks its person too.
    with pytest.raises(ValueError):
        check_owner_id(formats.PRIORITY_PENDING + "1")
