"""The booking page's one read model of a room (booking.slots.panel_state) checked against a
plain model of what was booked and held: random claims and holds in one room, then every
calendar, hour row and box grid the page can ask for must agree with the model slot by slot.
Also: the page's remembered pieces follow the active language."""

from __future__ import annotations

import datetime as dt
import random
import re
from collections.abc import Iterator

import pytest
import redis
import time_machine
from django.test import Client

from booking.domain.parser import SlotRequest
from booking.domain.rules import BOXES_PER_ROOM, HOURS_PER_DAY, booking_new_id
from booking.engine.holds import booking_hold
from booking.slots.panel_state import panel_state
from tests.booking_support import NOW, SECOND_BUYER, SHANGHAI, calendar_days, claim, day

ROOM = 7
VIEWER = "101"  # the buyer looking at the page (their own holds count as free)
Slot = tuple[str, int, int, int]  # (class, day of December, box or 0, hour or 0)

BOXES = range(1, BOXES_PER_ROOM + 1)
HOURS = range(HOURS_PER_DAY)


@pytest.fixture(autouse=True)
def frozen() -> Iterator[None]:
    with time_machine.travel(NOW, tick=False):
        yield


def slots_of(req: SlotRequest) -> set[Slot]:
    hours = range(*req.hours) if req.hours else [0]
    boxes = req.boxes or (0,)
    return {(req.cls, d.day, b, h) for d in req.dates for b in boxes for h in hours}


def random_requests(rng: random.Random) -> list[SlotRequest]:
    """Random requests of every class, plus days where class C is full all day (3), full
    from 08:00 to 12:00 (4) or from 01:00 to 03:00 (6), and a day where class B is full (5)."""
    made = [
        SlotRequest("C", ROOM, (day(3),), (0, 24), tuple(BOXES)),
        SlotRequest("C", ROOM, (day(4),), (8, 12), tuple(BOXES)),
        SlotRequest("B", ROOM, (day(5),), (0, 24), ()),
        SlotRequest("C", ROOM, (day(6),), (1, 3), tuple(BOXES)),
    ]
    for _ in range(40):
        days = tuple(sorted({day(rng.randint(1, 31)) for _ in range(rng.randint(1, 3))}))
        start = rng.randrange(0, 23)
        hours = (start, rng.randint(start + 1, min(24, start + 4)))
        cls = rng.choice("ABC")
        if cls == "A":
            made.append(SlotRequest("A", ROOM, days, None, ()))
        elif cls == "B":
            made.append(SlotRequest("B", ROOM, days, hours, ()))
        else:
            boxes = tuple(sorted(rng.sample(BOXES, rng.randint(1, 6))))
            made.append(SlotRequest("C", ROOM, days, hours, boxes))
    return made


@pytest.fixture
def taken(r: redis.Redis) -> set[Slot]:
    """Book and hold at random; the slots the viewer must see as taken."""
    rng = random.Random(2026)
    booked: set[Slot] = set()
    for req in random_requests(rng):
        if claim(r, req, owner=SECOND_BUYER).ok:
            booked |= slots_of(req)
    for owner in (SECOND_BUYER, VIEWER):  # another buyer's hold is taken, the viewer's is not
        for n, req in enumerate(random_requests(random.Random(owner))[4:14]):
            # One live hold per buyer: the other buyers' holds are ten buyers' holds.
            holder = owner if owner == VIEWER else f"{owner}-{n}"
            held = booking_hold(
                client=r, owner_id=holder, request=req, hold_id=booking_new_id(room=ROOM), now=NOW
            )
            if held.ok and owner != VIEWER:
                booked |= slots_of(held.hold.request if held.hold else req)
    return booked


def model_day_free(
    taken: set[Slot], cls: str, d: int, hours: tuple[int, int] | None, boxes: tuple[int, ...]
) -> bool:
    if cls == "A":
        return ("A", d, 0, 0) not in taken
    wanted = range(*hours) if hours else HOURS
    if cls == "B":
        free = [h for h in wanted if ("B", d, 0, h) not in taken]
        return len(free) == len(wanted) if hours else bool(free)
    if boxes and hours:
        return not any(("C", d, b, h) in taken for b in boxes for h in wanted)
    if boxes:
        return any(all(("C", d, b, h) not in taken for b in boxes) for h in HOURS)
    if hours:
        return any(all(("C", d, b, h) not in taken for h in wanted) for b in BOXES)
    return any(("C", d, b, h) not in taken for b in BOXES for h in HOURS)


def model_word(
    taken: set[Slot], cls: str, d: int, hours: tuple[int, int] | None, boxes: tuple[int, ...]
) -> set[str]:
    """The calendar words the model allows for day `d`: available when nothing of the class is
    taken that day, partly when the choice is free but something is taken, else one of the
    words of a blocked choice (held, sold for the choice, sold out)."""
    if not model_day_free(taken, cls, d, hours, boxes):
        return {"held", "sold_for", "sold_out"}
    return {"partly"} if any(s[0] == cls and s[1] == d for s in taken) else {"available"}


def model_hours(taken: set[Slot], cls: str, days: list[int], boxes: tuple[int, ...]) -> list[int]:
    def busy(d: int, h: int) -> bool:
        if cls == "B":
            return ("B", d, 0, h) in taken
        if boxes:
            return any(("C", d, b, h) in taken for b in boxes)
        return all(("C", d, b, h) in taken for b in BOXES)

    return [h for h in HOURS if any(busy(d, h) for d in days)]


def model_boxes(taken: set[Slot], days: list[int], hours: tuple[int, int] | None) -> list[int]:
    def busy(d: int, b: int) -> bool:
        if hours:
            return any(("C", d, b, h) in taken for h in range(*hours))
        return all(("C", d, b, h) in taken for h in HOURS)

    return [b for b in BOXES if any(busy(d, b) for d in days)]


CHOICES: list[tuple[tuple[int, int] | None, tuple[int, ...]]] = [
    (None, ()),
    ((8, 10), ()),
    ((0, 24), ()),
    ((11, 12), ()),
    ((0, 4), ()),
    ((17, 20), ()),
    ((1, 2), (1,)),
    (None, (1,)),
    (None, (2, 50, 100)),
    ((9, 13), (1, 2, 3, 4, 5, 6)),
    ((20, 24), (100,)),
]


@pytest.mark.parametrize("cls", ["A", "B", "C"])
def test_the_page_reads_agree_with_what_was_booked_and_held(
    r: redis.Redis, taken: set[Slot], cls: str
) -> None:
    rng = random.Random(cls)
    for hours, boxes in CHOICES:
        if cls != "C" and boxes:
            continue
        # the calendar may be part of the month, and chosen days may lie outside it: the
        # bitmap is then read in more than one run of days
        start, end = sorted(rng.sample(range(1, 32), 2))
        chosen = sorted({rng.randint(1, 31) for _ in range(rng.randint(1, 4))} | {3, 4, 5, 6})
        found = panel_state(
            client=r,
            cls=cls,
            room=ROOM,
            calendar=[day(d) for d in range(start, end + 1)],
            dates=[day(d) for d in chosen],
            hours=None if cls == "A" else hours,
            boxes=boxes if cls == "C" else (),
            owner_id=VIEWER,
            now=NOW,
        )
        use_hours = hours if cls != "A" else None
        use_boxes = boxes if cls == "C" else ()
        expected = [model_word(taken, cls, d, use_hours, use_boxes) for d in range(start, end + 1)]
        words = [d.state for d in found.days]
        assert all(w in e for w, e in zip(words, expected, strict=True)), (hours, boxes, words)
        if cls != "A":
            assert list(found.taken_hours) == model_hours(taken, cls, chosen, use_boxes)
        if cls == "C":
            assert list(found.taken_boxes) == model_boxes(taken, chosen, hours)
    # the full days of the set-up really are sold out
    full = {"A": [], "B": [5], "C": [3]}[cls]
    states = {d.date.day: d.state for d in calendar_days(client=r, cls=cls, room=ROOM)}
    assert all(states[d] == "sold_out" for d in full)


def test_class_a_days_on_every_bit_of_a_byte(r: redis.Redis) -> None:
    """Class A keeps one bit per day: days 1..31 cross four bytes of the bitmap."""
    booked = [1, 7, 8, 9, 16, 17, 24, 25, 31]
    for n in booked:
        assert claim(r, SlotRequest("A", ROOM, (day(n),), None, ())).ok
    for start, end in ((1, 31), (8, 8), (9, 24), (30, 31)):
        days = calendar_days(client=r, cls="A", room=ROOM, start=day(start), end=day(end))
        assert [d.date.day for d in days if d.state == "sold_out"] == [
            n for n in booked if start <= n <= end
        ]


def test_past_and_today_are_not_read_as_free_or_taken(r: redis.Redis) -> None:
    assert claim(r, SlotRequest("B", ROOM, (day(12),), (0, 24), ())).ok
    with time_machine.travel(dt.datetime(2026, 12, 10, 9, 0, tzinfo=SHANGHAI), tick=False):
        found = panel_state(
            client=r,
            cls="B",
            room=ROOM,
            calendar=[day(d) for d in range(1, 32)],
            dates=[day(12)],
        )
    states = {d.date.day: (d.state, d.reason) for d in found.days}
    assert states[9] == ("not_bookable", "past") and states[10] == ("not_bookable", "today")
    assert states[11] == ("available", "") and states[12] == ("sold_out", "")
    assert list(found.taken_hours) == list(HOURS)


def test_remembered_cells_follow_the_language(r: redis.Redis, client: Client) -> None:
    """The calendar's and grids' cells are rendered once per language and remembered: asking
    in English, Chinese, then English again shows each language's words every time."""
    assert claim(r, SlotRequest("A", ROOM, (day(5),), None, ())).ok
    query = {"cls": "A", "room": str(ROOM)}
    for language, word in (("en", "Sold out"), ("zh-hans", "缺"), ("en", "Sold out")):
        page = client.get("/book/", query, HTTP_ACCEPT_LANGUAGE=language).content.decode()
        cell = re.search(r'value="2026-12-05".*?</button>', page, re.S)
        assert cell is not None and word in cell.group(0), language
    # A box is named by its number; a taken one says so in the page's language.
    assert claim(r, SlotRequest("C", ROOM, (day(5),), (10, 12), (5,))).ok
    boxes = {"cls": "C", "room": str(ROOM), "date": "2026-12-05", "start": "10", "end": "12"}
    for language, word in (("en", "taken"), ("zh-hans", "已被占用"), ("en", "taken")):
        page = client.get("/book/", boxes, HTTP_ACCEPT_LANGUAGE=language).content.decode()
        assert page.count('id="box-cell-') == BOXES_PER_ROOM, language
        cell = re.search(r'<button id="box-cell-5"[^>]*>', page)
        assert cell is not None and f'aria-label="5 ({word})"' in cell.group(0), language
