"""The keeper (strongroom/keeper.py): which slots changed primary, and an idle pass writes
nothing (the failover repair itself: tests/store/test_cluster.py)."""

from __future__ import annotations

import redis

from strongroom import store
from strongroom.keeper import keeper_pass, slots_changed
from tests.store_support import commands_run

WRITES = {"set", "del", "srem", "sadd", "zadd", "zrem", "xadd", "fcall"}


def test_the_changed_slots_are_those_whose_primary_differs() -> None:
    before = "0-5460=a,5461-10922=b,10923-16383=c"
    after = "0-5460=a,5461-10922=d,10923-16383=c"
    assert slots_changed(before, after) == frozenset(range(5461, 10923))
    assert slots_changed(before, before) == frozenset()
    moved = "0-5000=a,5001-10922=b,10923-16383=c"
    assert slots_changed(before, moved) == frozenset(range(5001, 5461))


def test_an_idle_pass_of_the_keeper_only_reads(r: redis.Redis) -> None:
    keeper_pass(client=r)  # on a cluster the first pass writes the primaries down
    before = commands_run(r)
    keeper_pass(client=r)
    ran = commands_run(r) - before
    ran["info"] -= len(store.primaries(r))
    assert not WRITES & {name for name, calls in ran.items() if calls > 0}, dict(ran)
