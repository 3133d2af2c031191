"""The staff audit table puts each entry's subject under its own column: a closure's rooms under
Room, a book's id beside its title (not under Booking), and a move's detail in the reader's
language."""

from __future__ import annotations

import re
from collections.abc import Callable

import redis
from django.test import Client
from django.utils import translation

from dashboard.audit_words import detail_label
from strongroom.audit import staff_audit_record
from tests.conftest import Someone


def cells(page: str, kind: str) -> list[str]:
    row = re.search(rf'<tr data-kind="{kind}">(.*?)</tr>', page, re.S)
    assert row is not None, kind
    return [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td>(.*?)</td>", row[1], re.S)]


def test_closures_show_their_rooms_under_room_and_books_their_id_beside_the_title(
    r: redis.Redis, staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    staff_audit_record(
        client=r, kind="closure_add", actor_id=str(staff.id), subject="283",
        detail="2026-12-12..2026-12-12 0-24: repairs",
    )  # fmt: skip
    staff_audit_record(
        client=r, kind="book_delete", actor_id=str(staff.id), subject="17", detail="Dune"
    )
    page = client_for(staff).get("/staff/audit/").content.decode()
    _when, _kind, _who, room, booking, detail = cells(page, "closure_add")
    assert room == "283" and booking == "" and "repairs" in detail
    _when, _kind, _who, room, booking, detail = cells(page, "book_delete")
    assert room == "" and booking == "" and detail == "Dune (book 17)"


def test_a_move_s_detail_speaks_the_reader_s_language() -> None:
    with translation.override("zh-hans"):
        assert str(detail_label("move", "from 263-hhgabc")) == "移自 263-hhgabc"
        assert str(detail_label("move", "to 273-y33abc")) == "移至 273-y33abc"
    assert str(detail_label("move", "to 273-y33abc")) == "to 273-y33abc"
