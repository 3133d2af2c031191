"""On a real cluster with replicas: a claim whose shard's replica could not confirm it (stopped,
as a primary that lost its replica) is stored, marked not confirmed yet, listed to its buyer at
once, and settled once the replica answers again (booking.engine.unsure)."""

from __future__ import annotations

import os
import signal

import pytest
import redis

from booking.domain.keys import RoomKeys
from booking.domain.rules import booking_new_id
from booking.engine.bookings import booking_get, bookings_of
from booking.engine.claims import booking_claim
from booking.engine.unsure import booking_settle
from strongroom.durable import NotDurable, durability
from strongroom.embedded_cluster import LocalCluster
from tests.booking_support import NOW, request
from tests.store.test_cluster import cluster, on_cluster  # noqa: F401
from tests.store_support import replica_of

pytestmark = pytest.mark.store


def test_a_claim_no_replica_confirmed_is_listed_as_not_confirmed_until_settled(
    cluster: LocalCluster,  # noqa: F811
    on_cluster: redis.Redis,  # noqa: F811
) -> None:
    assert durability(on_cluster) == "aof+replica"
    wanted = request("A", room=7, dates=(5,))
    pid = replica_of(cluster, on_cluster, RoomKeys(7).ledger).pid()
    assert pid is not None
    booking_id = booking_new_id(room=7)
    os.kill(pid, signal.SIGSTOP)
    try:
        with pytest.raises(NotDurable):
            booking_claim(
                client=on_cluster, owner_id="101", request=wanted, booking_id=booking_id, now=NOW
            )
        stored = booking_get(client=on_cluster, booking_id=booking_id)
        assert stored is not None and stored.status == "confirmed" and stored.unsure
        # Its buyer's list shows it at once (the claim could not write the indexes: the
        # readers did), marked.
        listed = bookings_of(client=on_cluster, owner_id="101")
        assert [(b.id, b.unsure) for b in listed] == [(booking_id, True)]
        with pytest.raises(NotDurable):
            booking_settle(client=on_cluster, booking_id=booking_id)
        assert booking_get(client=on_cluster, booking_id=booking_id).unsure  # type: ignore[union-attr]
    finally:
        os.kill(pid, signal.SIGCONT)
    assert booking_settle(client=on_cluster, booking_id=booking_id)
    settled = booking_get(client=on_cluster, booking_id=booking_id)
    assert settled is not None and not settled.unsure
    # The same claim again (the buyer's retry) answers the same booking, confirmed.
    again = booking_claim(
        client=on_cluster, owner_id="101", request=wanted, booking_id=booking_id, now=NOW
    )
    assert again.ok and again.booking is not None and not again.booking.unsure
