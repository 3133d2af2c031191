"""Moves through kill -9: buyers (real processes) move their bookings round and round, within a
room and across rooms, while the store is killed again and again. Afterwards (and after the
recovery of moves cut off half way) every booking is in exactly one of its places, with exactly
that place's slots, and every slot is owned by at most one booking."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from booking.domain.keys import RoomKeys
from booking.engine.indexes import bookings_by_id
from booking.engine.moves_rooms import moves_recover
from strongroom import embedded, store
from strongroom import keyspace as ks
from strongroom.decoders import text_hash
from tests.booking_move_crash_worker import places
from tests.booking_support import NOW, booked_b_slots, claim, request
from tests.store_support import kill_and_restart

ROOT = Path(__file__).resolve().parents[3]
WORKERS = 4
EACH = 10  # bookings a worker moves
ROUNDS = 40
KILLS = 6
ROOMS = range(1, 21)


@pytest.mark.parametrize("mode", ["inline", "pending"])
def test_kill_9_while_buyers_move_leaves_every_booking_in_exactly_one_place(
    own_store: Path, mode: str, settings: object
) -> None:
    settings.STRONGROOM_DURABILITY = "aof"  # type: ignore[attr-defined]
    url = embedded.url_for(own_store)
    client = store.connect(url)
    if mode == "pending":  # the cluster path on this one server
        client._strongroom_tags_may_mix = False  # type: ignore[attr-defined]
    total = WORKERS * EACH
    first = {}
    for index in range(total):
        made = claim(client, request("B", **places(index)[0]), owner=str(300 + index))  # type: ignore[arg-type]
        assert made.ok and made.booking is not None
        first[index] = made.booking
    client.close()

    workers = []
    for w in range(WORKERS):
        mine = [f"{i}:{first[i].id}" for i in range(w * EACH, (w + 1) * EACH)]
        argv = [sys.executable, "-m", "tests.booking_move_crash_worker", url, *mine, "--"]
        workers.append(subprocess.Popen([*argv, str(ROUNDS)], stdout=subprocess.PIPE, cwd=ROOT))
    try:
        for worker in workers:
            assert worker.stdout is not None and worker.stdout.readline().strip() == b"ready"
        for _ in range(KILLS):
            time.sleep(0.3)
            kill_and_restart(own_store)
        for worker in workers:
            worker.communicate(timeout=300)
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
                worker.wait()

    client = store.connect(url)
    try:
        if mode == "pending":
            client._strongroom_tags_may_mix = False  # type: ignore[attr-defined]
        settled = moves_recover(client=client, now=NOW + dt.timedelta(minutes=5))
        pipe = client.pipeline(transaction=False)
        for room in ROOMS:
            pipe.smembers(RoomKeys(room).ledger)
        ids = sorted(i for members in pipe.execute() for i in members)
        live = bookings_by_id(client=client, ids=ids)
        moved_across = sum(1 for b in live if b.uid_id)
        print(f"{mode}: {settled} settled by the recovery, {moved_across} across rooms now")
        # Exactly one live booking per reference, each in one of its own places.
        by_ref = Counter(b.reference for b in live)
        assert sorted(by_ref) == sorted(b.reference for b in first.values())
        assert set(by_ref.values()) == {1}
        owned: Counter[tuple[int, int, int]] = Counter()
        for b in live:
            index = int(b.owner_id) - 300
            place = (b.room, b.dates, b.hours)
            allowed = [
                (p["room"], tuple(dt.date(2026, 12, d) for d in p["dates"]),  # type: ignore[attr-defined]
                 (p["hour_start"], p["hour_end"]))
                for p in places(index)
            ]  # fmt: skip
            assert place in allowed, (b, allowed)
            assert b.status == "confirmed"
            for date in b.dates:
                owned[(b.room, date.day - 1, b.hours[0])] += 1  # type: ignore[index]
        # Every slot owned by at most one booking, and the bitmaps hold exactly those slots.
        assert max(owned.values()) == 1
        assert booked_b_slots(client, ROOMS) == set(owned)
        assert sum(client.zcard(RoomKeys(room).moves) for room in ROOMS) == 0
        records = [k for k in client.scan_iter(match=ks.prefix_pattern(), count=1000)
                   if ks.BOOKING_RECORD.matches(k)]  # fmt: skip
        assert len(records) >= total
        assert all(text_hash(client.hgetall(k)).get("status") != "pending" for k in records)
        assert moved_across > 0
    finally:
        client.close()
