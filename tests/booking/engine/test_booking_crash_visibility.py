"""Every stored booking is visible: kill -9 of the store while buyers book (real processes, a
real store) leaves no booking whose slots are taken missing from its owner's page or the staff
lists once the store is back. On one server the claim function writes the person and date
indexes itself; on a cluster (here: the same server, with the cluster path forced) the claim
names the booking in its room's `unindexed` set, and the keeper's next pass
(strongroom/keeper.py, every few seconds in each web process) drains it. The control: read the
indexes as the old two-step design did, without the drain, and bookings are missing."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from booking.domain.keys import RoomKeys, person_index
from booking.domain.rules import booking_id_room
from booking.engine import bookings, claims
from booking.engine.bookings import bookings_between, bookings_page
from strongroom import embedded, store
from strongroom.keeper import keeper_pass
from strongroom.store import tags_may_mix
from tests.booking_support import NOW, claim, day, request
from tests.store_support import kill_and_restart

ROOT = Path(__file__).resolve().parents[3]
WORKERS = 6
CLAIMS_EACH = 800  # 5 rooms each
ROOMS = range(1, WORKERS * 5 + 1)
KILLS = 8
TODAY = NOW.date()


def book_through_kills(data_dir: Path, mode: str) -> list[str]:
    """WORKERS buyer processes book while the store is killed KILLS times; the ids confirmed."""
    url = embedded.url_for(data_dir)
    module = "tests.booking_crash_worker"
    workers = []
    for w in range(WORKERS):
        argv = [sys.executable, "-m", module, url, str(500 + w), str(1 + 5 * w), mode]
        argv.append(str(CLAIMS_EACH))
        workers.append(subprocess.Popen(argv, stdout=subprocess.PIPE, cwd=ROOT, text=True))
    try:
        for worker in workers:
            assert worker.stdout is not None and worker.stdout.readline().strip() == "ready"
        for _ in range(KILLS):
            time.sleep(0.15)
            kill_and_restart(data_dir)
        # Read through the same buffered pipe as "ready" (communicate with a timeout reads the
        # raw pipe and loses what readline read ahead: an id's first bytes, once). Each worker
        # writes at most 25 KB, within the pipe's buffer, so waiting first cannot block it.
        outputs = []
        for worker in workers:
            worker.wait(timeout=300)
            assert worker.stdout is not None
            outputs.append(worker.stdout.read())
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
    confirmed = [line for out in outputs for line in out.split()]
    assert all(booking_id_room(i) for i in confirmed), "a worker's output was read in part"
    return confirmed


def stored(client: redis.Redis) -> dict[str, str]:
    """Every booking the store holds (from the rooms' ledgers): id -> owner."""
    pipe = client.pipeline(transaction=False)
    for room in ROOMS:
        pipe.smembers(RoomKeys(room).ledger)
    ids = sorted(i for members in pipe.execute() for i in members)
    owners: dict[str, str] = {}
    for booking_id in ids:
        owner = client.hget(RoomKeys(int(booking_id[:3])).record(booking_id), "owner")
        assert owner is not None
        owners[str(booking_id)] = str(owner)
    return owners


def missing_from_raw_index(client: redis.Redis, owners: dict[str, str]) -> list[str]:
    """What the old design's reader (the person index as it stands) does not show."""
    listed = {
        i for owner in set(owners.values()) for i in client.zrange(person_index(owner), 0, -1)
    }
    return sorted(set(owners) - listed)


def missing_from_pages(client: redis.Redis, owners: dict[str, str]) -> list[str]:
    """What the owners' "My bookings" pages (every page) and the staff list do not show."""
    shown: set[str] = set()
    for owner in set(owners.values()):
        offset = 0
        while True:
            page = bookings_page(client=client, owner_id=owner, today=TODAY, offset=offset)
            shown.update(b.id for b in page.bookings)
            if not page.has_next:
                break
            offset += page.limit
    staff = {b.id for b in bookings_between(client=client, start=day(3), end=day(10), limit=10**6)}
    return sorted((set(owners) - shown) | (set(owners) - staff))


@pytest.mark.long
@pytest.mark.parametrize("mode", ["inline", "pending"])
def test_kill_9_during_claims_leaves_no_booking_missing_from_its_owner_s_page(
    own_store: Path, mode: str, settings: object
) -> None:
    settings.STRONGROOM_DURABILITY = "aof"  # type: ignore[attr-defined]
    confirmed = book_through_kills(own_store, mode)
    client = store.connect(embedded.url_for(own_store))
    try:
        if mode == "pending":
            client._strongroom_tags_may_mix = False  # type: ignore[attr-defined]
        assert tags_may_mix(client) == (mode == "inline")
        owners = stored(client)
        assert set(confirmed) <= set(owners), "a confirmed booking was lost"
        assert len(owners) > 100
        raw = missing_from_raw_index(client, owners)
        print(f"{mode}: {len(owners)} stored, {len(raw)} missing without the drain")
        if mode == "inline":
            assert raw == []  # written with the booking: nothing to drain
        else:
            keeper_pass(client=client)  # the keeper's next pass, as a web process runs it
        assert missing_from_pages(client, owners) == []
        assert sum(client.zcard(RoomKeys(room).unindexed) for room in ROOMS) == 0
    finally:
        client.close()


def test_a_crash_between_the_claim_and_the_index_step_hides_nothing(
    own_store: Path, monkeypatch: pytest.MonkeyPatch, settings: object
) -> None:
    """The control, made exact: the store dies right after the claim function, before the
    index step the old design relied on. The old reader misses the booking; the pages show it
    once the keeper has passed (no mark names the room: the store was away to write one)."""
    settings.STRONGROOM_DURABILITY = "aof"  # type: ignore[attr-defined]
    client = store.connect(embedded.url_for(own_store))
    client._strongroom_tags_may_mix = False  # type: ignore[attr-defined]

    def die(**_kwargs: object) -> None:
        kill_and_restart(own_store)
        raise redis.ConnectionError("the store went away")

    monkeypatch.setattr(claims, "indexes_after_claim", die)
    with pytest.raises(redis.ConnectionError):
        claim(client, request("A", room=9), owner="777")
    client.close()
    again = store.connect(embedded.url_for(own_store))
    again._strongroom_tags_may_mix = False  # type: ignore[attr-defined]
    try:
        owners = stored(again)
        assert len(owners) == 1
        assert missing_from_raw_index(again, owners) == list(owners)  # the old design: hidden
        keeper_pass(client=again)
        page = bookings_page(client=again, owner_id="777", today=TODAY)
        assert [b.id for b in page.bookings] == list(owners)
        assert again.zcard(RoomKeys(9).unindexed) == 0
        assert bookings.bookings_of(client=again, owner_id="777")[0].dates == (
            dt.date(2026, 12, 3),
        )
    finally:
        again.close()
