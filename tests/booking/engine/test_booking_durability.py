"""Durability: confirmed claims survive `kill -9` of the store (a dedicated embedded server)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import redis

from booking.domain.keys import RoomKeys
from booking.domain.rules import booking_new_id
from booking.engine import bookings
from booking.engine.claims import booking_claim
from strongroom import embedded, store
from tests.booking_support import NOW, request

CLAIMS = 200


@pytest.fixture
def own_store(tmp_path: Path) -> Iterator[tuple[Path, redis.Redis]]:
    """A store of this test alone (never the session's), stopped at the end."""
    data_dir = tmp_path / "store"
    client = store.connect(embedded.ensure_running(data_dir))
    store.load_functions(client)
    yield data_dir, client
    client.close()
    embedded.stop(data_dir)


def wait_until_gone(pid: int) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.02)
    raise AssertionError(f"process {pid} still alive")


def test_two_hundred_confirmed_claims_survive_kill_9(
    own_store: tuple[Path, redis.Redis], settings: object
) -> None:
    settings.STRONGROOM_DURABILITY = "aof"  # type: ignore[attr-defined]
    data_dir, client = own_store
    # 200 different slots: class B, rooms 1..10, one hour each of 0..19.
    requests = [
        request("B", room=room, dates=(3,), hour_start=hour, hour_end=hour + 1)
        for room in range(1, 11)
        for hour in range(20)
    ]

    def confirm(req: object) -> str:
        result = booking_claim(
            client=client, owner_id="101", request=req,  # type: ignore[arg-type]
            booking_id=booking_new_id(room=req.room), now=NOW,  # type: ignore[attr-defined]
        )  # fmt: skip
        assert result.ok and result.booking is not None
        return result.booking.id

    with ThreadPoolExecutor(max_workers=20) as pool:
        confirmed = list(pool.map(confirm, requests))
    assert len(set(confirmed)) == CLAIMS

    pid = embedded.server_pid(data_dir)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    wait_until_gone(pid)
    client.close()
    assert not embedded.answers(data_dir)

    embedded.ensure_running(data_dir)
    assert embedded.server_pid(data_dir) != pid
    again = store.connect(embedded.url_for(data_dir))
    try:
        found = [bookings.booking_get(client=again, booking_id=i) for i in confirmed]
        assert all(b is not None and b.status == "confirmed" for b in found)
        bits = sum(
            again.bitcount(RoomKeys(room).inventory("B", "2026-12")) for room in range(1, 11)
        )
        assert bits == CLAIMS
        assert sum(again.scard(RoomKeys(room).ledger) for room in range(1, 11)) == CLAIMS
    finally:
        again.close()
