"""Priority holds from the waiting list count toward a small per-buyer cap
(STRONGROOM_PRIORITY_HOLDS_PER_BUYER), and at no moment may a buyer use more: the room places a
priority hold pending, the buyer's own slot grants it in one call, and only then is it usable
(issue 33, point 3)."""

from __future__ import annotations

import datetime as dt
import threading

import pytest
import redis

from booking.domain.parser import SlotRequest, slot_request_parse
from booking.domain.rules import booking_new_id, hold_new_id
from booking.engine.bookings import hold_get
from booking.engine.cancel import booking_cancel
from booking.engine.claims import booking_claim
from booking.engine.waits import Wait, wait_join, waits_of
from strongroom import keyspace as ks
from strongroom.clock import to_ms
from tests.booking.engine.test_booking_race import run_together
from tests.booking_support import day
from tests.conftest import Someone, person_make


def a_day(room: int) -> SlotRequest:
    return slot_request_parse(cls="A", room=room, dates=[day(5)])


def freed_for(
    r: redis.Redis,
    owner: Someone,
    waiter: Someone,
    rooms: list[int],
    *,
    then: Someone | None = None,
) -> None:
    """`owner` books day 5 in each room, `waiter` waits for each (and `then` after them),
    `owner` cancels them all at once."""
    made = []
    for room in rooms:
        booked = booking_claim(
            client=r, owner_id=str(owner.id), request=a_day(room),
            booking_id=booking_new_id(room=room),
        )  # fmt: skip
        assert booked.ok and booked.booking is not None
        made.append(booked.booking.id)
        for who in (waiter, then) if then else (waiter,):
            assert wait_join(client=r, owner_id=str(who.id), wait=Wait(room, "A", day(5))) == "ok"
    run_together(
        lambda i: booking_cancel(
            client=r, booking_id=made[i], actor_id=str(owner.id), actor_is_staff=False
        ),
        threads=len(made),
    )


def priority_hold_ids(r: redis.Redis, waiter: Someone) -> dict[int, str]:
    """Room -> the priority hold the waiting list placed for `waiter` there."""
    return {w.wait.room: w.hold_id for w in waits_of(client=r, owner_id=str(waiter.id)) if w.mine}


def usable_by(r: redis.Redis, waiter: Someone, hold_ids: dict[int, str]) -> list[int]:
    """The rooms whose priority hold `waiter` may use now (the claim and the hold treat a hold
    as free for its owner and taken for everyone else)."""
    return sorted(
        room
        for room, hold_id in hold_ids.items()
        if (held := hold_get(client=r, hold_id=hold_id)) and held.owner_id == str(waiter.id)
    )


def test_slots_freeing_at_once_never_give_a_buyer_more_priority_holds_than_the_cap(
    r: redis.Redis, buyer: Someone, second_buyer: Someone, settings: object
) -> None:
    """Five rooms free at once for one waiter. Before any mail sender ran, each freed slot is
    refused to a third buyer (held) and the waiter may book at most the cap of them; once the
    sender ran, one is the waiter's and four are everyone's."""
    from strongroom.outbox_delivery import outbox_send

    settings.STRONGROOM_PRIORITY_HOLDS_PER_BUYER = 1  # type: ignore[attr-defined]
    third = person_make(r, "third_party")
    rooms = [31, 32, 33, 34, 35]
    freed_for(r, buyer, second_buyer, rooms, then=third)
    assert len(priority_hold_ids(r, second_buyer)) == 5
    usable = []
    for room in rooms:
        thief = booking_claim(
            client=r, owner_id=str(third.id), request=a_day(room),
            booking_id=booking_new_id(room=room),
        )  # fmt: skip
        assert not thief.ok, "the freed slot is held (for the waiter) until the sender ran"
        mine = booking_claim(
            client=r, owner_id=str(second_buyer.id), request=a_day(room),
            booking_id=booking_new_id(room=room),
        )  # fmt: skip
        usable += [room] if mine.ok else []
    assert len(usable) <= 1, f"the waiter could use priority holds in rooms {usable}"

    outbox_send(client=r)  # the sender grants what the waiter may have
    hold_ids = priority_hold_ids(r, second_buyer)
    (granted,) = usable_by(r, second_buyer, hold_ids)
    # The other waiter's notices say someone has priority only where someone still has.
    others = {w.wait.room: w for w in waits_of(client=r, owner_id=str(third.id))}
    assert sorted(others) == rooms
    assert [room for room, w in others.items() if w.priority_until is not None] == [granted]
    for room in (room for room in rooms if room != granted):
        assert hold_get(client=r, hold_id=hold_ids.get(room, "")) is None
        assert booking_claim(
            client=r, owner_id=str(third.id), request=a_day(room),
            booking_id=booking_new_id(room=room),
        ).ok  # fmt: skip
    assert booking_claim(
        client=r, owner_id=str(second_buyer.id), request=a_day(granted),
        booking_id=booking_new_id(room=granted), hold_id=hold_ids[granted],
    ).ok  # fmt: skip
    # The notices no longer offer the holds given back, nor say that someone has them.
    told = {w.wait.room: w for w in waits_of(client=r, owner_id=str(second_buyer.id))}
    assert all(not told[room].mine for room in rooms if room in told and room != granted)


@pytest.mark.parametrize("grant", [True, False], ids=["grant", "control-no-grant"])
def test_many_slots_freeing_at_once_for_one_waiter_stay_within_the_cap_at_every_moment(
    r: redis.Redis, buyer: Someone, second_buyer: Someone, settings: object, grant: bool
) -> None:
    """Eight rooms free at once; sixteen threads (a mail sender and the buyer's "Book it" for
    each) grant the eight priority holds while another thread keeps counting those the waiter
    may use. The control makes each hold usable without the buyer's slot, and the count does
    exceed the cap."""
    from booking.engine.priority import priority_grant, priority_settle

    settings.STRONGROOM_PRIORITY_HOLDS_PER_BUYER = 2  # type: ignore[attr-defined]
    settings.STRONGROOM_WAITS_PER_BUYER = 8  # type: ignore[attr-defined]
    rooms = list(range(41, 49))
    freed_for(r, buyer, second_buyer, rooms)
    hold_ids = priority_hold_ids(r, second_buyer)
    assert sorted(hold_ids) == rooms and usable_by(r, second_buyer, hold_ids) == []
    seen: list[int] = []
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            seen.append(len(usable_by(r, second_buyer, hold_ids)))

    def settle(i: int) -> str:
        hold_id = hold_ids[rooms[i % len(rooms)]]
        if grant:
            answer = priority_grant(client=r, person_id=second_buyer.id, hold_id=hold_id)
        else:
            now_ms = to_ms(dt.datetime.now(tz=dt.UTC))
            answer = priority_settle(
                client=r, person_id=second_buyer.id, hold_id=hold_id, kept=True, now_ms=now_ms
            )
        seen.append(len(usable_by(r, second_buyer, hold_ids)))  # while the others still run
        return answer

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        answers = run_together(settle, threads=2 * len(rooms))
    finally:
        done.set()
        watcher.join()
    seen.append(len(usable_by(r, second_buyer, hold_ids)))
    if not grant:
        assert max(seen) == len(rooms), "the control uses every hold: the count can fail"
        return
    assert max(seen) <= 2, f"at some moment the waiter could use {max(seen)} priority holds"
    assert seen[-1] == 2
    granted = {rooms[i % len(rooms)] for i, a in enumerate(answers) if a == "granted"}
    assert len(granted) == 2 and set(usable_by(r, second_buyer, hold_ids)) == granted
    grants = ks.BOOKING_PRIORITY_OF.key(person_id=second_buyer.id)
    assert set(r.zrange(grants, 0, -1)) == {hold_ids[room] for room in granted}
    third = person_make(r, "third_party")
    for room in (room for room in rooms if room not in granted):
        assert booking_claim(
            client=r, owner_id=str(third.id), request=a_day(room),
            booking_id=booking_new_id(room=room),
        ).ok, room  # fmt: skip


def test_a_crash_between_the_grant_and_the_hold_lets_no_one_use_it_and_a_retry_finishes(
    r: redis.Redis, buyer: Someone, second_buyer: Someone, settings: object
) -> None:
    """The buyer's slot granted room 51's hold, then the sender died before the room heard of
    it: the hold is nobody's (the waiter's neither) and still counts toward the cap, so room
    52's goes to everyone; the sender's retry finishes room 51. Never retried, the hold ends
    with its life and the slot is everyone's."""
    from booking.engine.priority import priority_grant, priority_take

    settings.STRONGROOM_PRIORITY_HOLDS_PER_BUYER = 1  # type: ignore[attr-defined]
    third = person_make(r, "third_party")
    freed_for(r, buyer, second_buyer, [51, 52])
    hold_ids = priority_hold_ids(r, second_buyer)
    first = hold_get(client=r, hold_id=hold_ids[51])
    assert first is not None
    now_ms = to_ms(dt.datetime.now(tz=dt.UTC))
    assert priority_take(
        client=r, person_id=second_buyer.id, hold_id=hold_ids[51],
        expires_ms=to_ms(first.expires_at), now_ms=now_ms,
    )  # fmt: skip
    # ... killed here.
    for who in (second_buyer, third):
        assert not booking_claim(
            client=r, owner_id=str(who.id), request=a_day(51), booking_id=booking_new_id(room=51)
        ).ok
    assert usable_by(r, second_buyer, hold_ids) == []
    assert priority_grant(client=r, person_id=second_buyer.id, hold_id=hold_ids[52]) == "released"
    assert booking_claim(
        client=r, owner_id=str(third.id), request=a_day(52), booking_id=booking_new_id(room=52)
    ).ok
    # Never retried: the hold ends with its life, and the slot is everyone's.
    after = first.expires_at + dt.timedelta(seconds=1)
    assert booking_claim(
        client=r, owner_id=str(third.id), request=a_day(51),
        booking_id=booking_new_id(room=51), now=after,
    ).ok  # fmt: skip


def test_the_sender_killed_between_the_steps_is_taken_over_and_grants_once(
    r: redis.Redis,
    buyer: Someone,
    second_buyer: Someone,
    settings: object,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A mail sender dies after the buyer's slot granted the hold and before the room made it
    usable (its entry stays unacknowledged); the next sender takes the entry over and finishes:
    the hold is the waiter's, granted once."""
    from booking.engine import priority
    from strongroom.outbox import GROUP, mailboxes
    from strongroom.outbox_delivery import outbox_send

    settings.STRONGROOM_PRIORITY_HOLDS_PER_BUYER = 1  # type: ignore[attr-defined]
    freed_for(r, buyer, second_buyer, [53])
    hold_ids = priority_hold_ids(r, second_buyer)

    class Killed(BaseException):
        """What kill -9 does to the sender: nothing after this point runs."""

    def die(**_: object) -> str:
        raise Killed

    monkeypatch.setattr(priority, "priority_settle", die)
    with pytest.raises(Killed):
        outbox_send(client=r)
    monkeypatch.undo()
    grants = ks.BOOKING_PRIORITY_OF.key(person_id=second_buyer.id)
    assert r.zrange(grants, 0, -1) == [hold_ids[53]]
    assert usable_by(r, second_buyer, hold_ids) == []
    # The dead sender stopped touching its entries: they look idle to the next one.
    room_box = ks.BOOKING_OUTBOX.key(room="053")
    assert room_box in mailboxes()
    ids: list[str | bytes | int | memoryview] = [
        p["message_id"] for p in r.xpending_range(room_box, GROUP, "-", "+", 100)
    ]
    assert ids
    r.xclaim(room_box, GROUP, "dead", 0, ids, idle=10**9, justid=True)
    outbox_send(client=r)
    assert usable_by(r, second_buyer, hold_ids) == [53]
    assert r.zrange(grants, 0, -1) == [hold_ids[53]]


def test_booking_the_waited_slot_without_the_priority_hold_gives_the_cap_back(
    r: redis.Redis, buyer: Someone, second_buyer: Someone, settings: object
) -> None:
    """The waiter books their slot through a hold of their own (not "Book it"): the priority
    hold of those very slots goes with the booking, so the next slot that frees for them is
    theirs again, not given away because a useless hold still counted."""
    from booking.engine.holds import booking_hold
    from booking.engine.priority import priority_grant

    settings.STRONGROOM_PRIORITY_HOLDS_PER_BUYER = 1  # type: ignore[attr-defined]
    owner = str(second_buyer.id)
    freed_for(r, buyer, second_buyer, [71])
    first = priority_hold_ids(r, second_buyer)[71]
    assert priority_grant(client=r, person_id=second_buyer.id, hold_id=first) == "granted"
    own = booking_hold(
        client=r, owner_id=owner, request=a_day(71), hold_id=hold_new_id(room=71), paced=True
    )
    assert own.ok and own.hold is not None
    assert booking_claim(
        client=r, owner_id=owner, request=a_day(71), booking_id=booking_new_id(room=71),
        hold_id=own.hold.id,
    ).ok  # fmt: skip
    assert hold_get(client=r, hold_id=first) is None
    freed_for(r, buyer, second_buyer, [72])
    second = priority_hold_ids(r, second_buyer)[72]
    assert priority_grant(client=r, person_id=second_buyer.id, hold_id=second) == "granted"


# A mail sender in its own process that kills itself with SIGKILL at the very point between
# the two steps: the buyer's slot has granted the hold, the room has not heard of it yet.
KILLED_BETWEEN_THE_STEPS = """
import os, signal
import django
django.setup()
from booking.engine import priority
from strongroom.outbox_delivery import outbox_send
from strongroom.store import get_store

def killed(**_):
    os.kill(os.getpid(), signal.SIGKILL)

priority.priority_settle = killed
outbox_send(client=get_store())
"""


def test_a_sender_process_killed_9_between_the_steps_leaves_the_hold_unusable_until_retried(
    r: redis.Redis,
    buyer: Someone,
    second_buyer: Someone,
    settings: object,
    tmp_path: object,
) -> None:
    """A real sender process dies by kill -9 right after the buyer's slot granted the priority
    hold: the grant counts (a second freed slot goes to everyone), the hold is nobody's, not
    even the waiter's; the next sender takes the entry over and makes it the waiter's."""
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    from booking.engine.priority import priority_grant
    from strongroom.outbox import GROUP
    from strongroom.outbox_delivery import outbox_send

    settings.STRONGROOM_PRIORITY_HOLDS_PER_BUYER = 1  # type: ignore[attr-defined]
    freed_for(r, buyer, second_buyer, [54])
    hold_ids = priority_hold_ids(r, second_buyer)
    root = Path(__file__).resolve().parents[3]
    env = {
        **os.environ,
        "REDIS_URL": str(settings.REDIS_URL),  # type: ignore[attr-defined]
        "STRONGROOM_DATA_DIR": str(tmp_path),
        "DEBUG": "0",
    }
    died = subprocess.run(
        [sys.executable, "-c", KILLED_BETWEEN_THE_STEPS], cwd=root, env=env, timeout=120,
        stdout=subprocess.DEVNULL, check=False,
    )  # fmt: skip
    assert died.returncode == -signal.SIGKILL
    grants = ks.BOOKING_PRIORITY_OF.key(person_id=second_buyer.id)
    assert r.zrange(grants, 0, -1) == [hold_ids[54]]
    assert usable_by(r, second_buyer, hold_ids) == []
    third = person_make(r, "third_party")
    for who in (second_buyer, third):
        assert not booking_claim(
            client=r, owner_id=str(who.id), request=a_day(54), booking_id=booking_new_id(room=54)
        ).ok
    # Another slot frees for the waiter meanwhile: the grant that counts leaves no room for it.
    freed_for(r, buyer, second_buyer, [55])
    other = priority_hold_ids(r, second_buyer)[55]
    assert priority_grant(client=r, person_id=second_buyer.id, hold_id=other) == "released"
    # The dead sender's entry, idle now, is taken over and finished by the next sender.
    box = ks.BOOKING_OUTBOX.key(room="054")
    ids: list[str | bytes | int | memoryview] = [
        p["message_id"] for p in r.xpending_range(box, GROUP, "-", "+", 100)
    ]
    assert ids
    r.xclaim(box, GROUP, "dead", 0, ids, idle=10**9, justid=True)
    outbox_send(client=r)
    assert usable_by(r, second_buyer, hold_ids) == [54]
    assert booking_claim(
        client=r, owner_id=str(second_buyer.id), request=a_day(54),
        booking_id=booking_new_id(room=54), hold_id=hold_ids[54],
    ).ok  # fmt: skip
