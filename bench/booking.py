"""Booking benchmark: `python -m bench.booking [--claims N]`.

Runs on its own embedded Valkey in a temporary directory (never the site's data) and prints:
claims/s with 1 and 16 client threads, on one contended room and spread over all rooms, for
each durability setting, and what one claim costs the store (its function's server time, the
process's CPU, commands, AOF bytes); store round trips per claim; MEMORY USAGE of a fully
booked season per class against the bit limit; and the same figures for the source's design
(hash of JSON arrays, read-modify-write), including how many bookings it doubled or lost under
a race.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_NEXT_DECEMBER = dt.date.today().year + 1
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "strongroom.settings")
os.environ.setdefault("DEBUG", "1")
os.environ.setdefault("STRONGROOM_SEASON_START", f"{_NEXT_DECEMBER}-12-01")
os.environ.setdefault("STRONGROOM_SEASON_END", f"{_NEXT_DECEMBER}-12-31")

import django  # noqa: E402

django.setup()

import redis  # noqa: E402
from django.conf import settings  # noqa: E402

from booking.domain.keys import RoomKeys  # noqa: E402
from booking.domain.parser import SlotRequest  # noqa: E402
from booking.domain.rules import booking_new_id, season_days  # noqa: E402
from booking.engine.claims import booking_claim  # noqa: E402
from booking.slots.bitmap import inventory_keys  # noqa: E402
from strongroom import decoders, embedded, store  # noqa: E402
from tests.naive_booking import hour_mask, naive_claim, naive_key  # noqa: E402

ROOMS = settings.STRONGROOM_ROOM_COUNT
DAYS = season_days()
OWNER = "bench"


def slot_stream(rooms: list[int], count: int, seed: int) -> list[tuple[int, int, int, int]]:
    """`count` distinct class C slots (room, day index, box, hour) over `rooms`."""
    rng = random.Random(seed)
    seen: set[tuple[int, int, int, int]] = set()
    while len(seen) < count:
        seen.add(
            (rng.choice(rooms), rng.randrange(len(DAYS)), rng.randint(1, 100), rng.randrange(24))
        )
    slots = list(seen)
    rng.shuffle(slots)
    return slots


def c_request(room: int, day: int, box: int, hour: int) -> SlotRequest:
    return SlotRequest("C", room, (DAYS[day],), (hour, hour + 1), (box,))


def run_clients(clients: int, jobs: list[Any], work: Callable[[Any], bool]) -> tuple[float, int]:
    """Spread `jobs` over `clients` threads; return (seconds, successes)."""
    chunks = [jobs[i::clients] for i in range(clients)]
    ok = [0] * clients
    barrier = threading.Barrier(clients + 1)

    def worker(i: int) -> None:
        barrier.wait()
        ok[i] = sum(1 for job in chunks[i] if work(job))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    barrier.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    return time.perf_counter() - started, sum(ok)


def strongroom_claim(client: redis.Redis) -> Callable[[Any], bool]:
    now = dt.datetime.now(tz=dt.UTC)

    def work(slot: tuple[int, int, int, int]) -> bool:
        req = c_request(*slot)
        return booking_claim(
            client=client,
            owner_id=OWNER,
            request=req,
            booking_id=booking_new_id(room=req.room),
            now=now,
        ).ok

    return work


def naive_work(client: redis.Redis) -> Callable[[Any], bool]:
    def work(slot: tuple[int, int, int, int]) -> bool:
        room, day, box, hour = slot
        return naive_claim(
            client,
            cls="C",
            room=room,
            dates=[DAYS[day].isoformat()],
            hours=(hour, hour + 1),
            boxes=[box],
        )

    return work


def throughput(
    client: redis.Redis,
    make: Callable[[redis.Redis], Callable[[Any], bool]],
    claims: int,
    *,
    slow: bool = False,
) -> dict[str, float]:
    """Claims/s per (clients, layout): the median of three runs on an empty store. A `slow`
    mode (one fsync a second) runs fewer claims."""
    figures = {}
    for layout, rooms in (("one room", [1]), ("all rooms", list(range(1, ROOMS + 1)))):
        for clients in (1, 16):
            count = max(claims // 4, 20) if clients > 1 else max(claims // 16, 20)
            if slow:
                count = 30 if clients == 1 else 400
            rates = []
            for run in range(3):
                client.flushall()
                store.load_functions(client)
                jobs = slot_stream(rooms, count, seed=clients * 10 + run)
                seconds, ok = run_clients(clients, jobs, make(client))
                assert ok == count, f"{ok} of {count} distinct claims succeeded"
                rates.append(count / seconds)
            figures[f"{clients:>2} client(s), {layout}"] = statistics.median(rates)
    return figures


def fill_season(client: redis.Redis, cls: str) -> int:
    """Book every slot of class `cls` in every room for the whole season; MEMORY USAGE total."""
    client.flushall()
    store.load_functions(client)
    now = dt.datetime.now(tz=dt.UTC)
    for room in range(1, ROOMS + 1):
        for first in range(0, len(DAYS), 31):
            dates = tuple(DAYS[first : first + 31])
            hours = None if cls == "A" else (0, 24)
            boxes = tuple(range(1, 101)) if cls == "C" else ()
            req = SlotRequest(cls, room, dates, hours, boxes)
            result = booking_claim(
                client=client,
                owner_id=OWNER,
                request=req,
                booking_id=booking_new_id(room=room),
                now=now,
            )
            assert result.ok
    keys = [k.key for k in inventory_keys(client=client)]
    return sum(int(client.memory_usage(k, samples=0) or 0) for k in keys)


def fill_naive(client: redis.Redis, cls: str) -> int:
    client.flushall()
    full = hour_mask(0, 24)
    for room in range(1, ROOMS + 1):
        if cls == "A":
            value: str = "1"
        elif cls == "B":
            value = str(full)
        else:
            value = json.dumps([full] * 100, separators=(",", ":"))
        client.hset(naive_key(cls, room), mapping={d.isoformat(): value for d in DAYS})
    return sum(
        int(client.memory_usage(naive_key(cls, room), samples=0) or 0)
        for room in range(1, ROOMS + 1)
    )


def race(client: redis.Redis, *, naive: bool, pause: float) -> tuple[int, int, int]:
    """16 clients, overlapping random multi-slot claims in one room: (won, doubled, lost)."""
    client.flushall()
    store.load_functions(client)
    now = dt.datetime.now(tz=dt.UTC)
    won: list[tuple[list[int], tuple[int, int], list[int]]] = []
    lock = threading.Lock()

    def work(seed: int) -> bool:
        rng = random.Random(seed)
        days = sorted(rng.sample([0, 1], rng.randint(1, 2)))
        start = rng.randint(8, 13)
        hours = (start, rng.randint(start + 1, 15))
        boxes = sorted(rng.sample(range(1, 5), rng.randint(1, 2)))
        if naive:
            ok = naive_claim(
                client,
                cls="C",
                room=1,
                dates=[DAYS[d].isoformat() for d in days],
                hours=hours,
                boxes=boxes,
                pause=pause,
            )
        else:
            req = SlotRequest("C", 1, tuple(DAYS[d] for d in days), hours, tuple(boxes))
            ok = booking_claim(
                client=client,
                owner_id=OWNER,
                request=req,
                booking_id=booking_new_id(room=1),
                now=now,
            ).ok
        if ok:
            with lock:
                won.append((days, hours, boxes))
        return ok

    run_clients(16, list(range(16 * 20)), work)
    seen: set[tuple[int, int, int]] = set()
    doubled = 0
    for days, hours, boxes in won:
        for slot in {(d, b, h) for d in days for b in boxes for h in range(*hours)}:
            doubled += slot in seen
            seen.add(slot)
    if naive:
        stored = {
            DAYS.index(dt.date.fromisoformat(k)): json.loads(v)
            for k, v in decoders.text_hash(client.hgetall(naive_key("C", 1))).items()
        }
        lost = sum(1 for d, b, h in seen if not stored[d][b - 1] & (1 << (23 - h)))
    else:
        key = RoomKeys(1).inventory("C", DAYS[0])  # the bench sells one December
        pipe = client.pipeline(transaction=False)
        for d, b, h in seen:
            pipe.getbit(key, (d * 100 + b - 1) * 24 + h)
        lost = sum(1 for bit in pipe.execute() if not bit)
    return len(won), doubled, lost


@dataclass(frozen=True)
class StoreCost:
    """What one claim costs the store, from its own counters over a run of claims."""

    function_us: float  # server time of the claim's FCALL (INFO commandstats)
    cpu_us: float  # the store process's CPU, user + system (INFO cpu)
    commands: float  # commands run, the function's own calls included
    aof_bytes: float  # growth of the append-only file


def store_cost(client: redis.Redis, claims: int) -> StoreCost:
    """The store's cost of a class C claim (one box, one hour, rooms at random) made by one
    client on an empty store, after a few hundred claims of warm-up."""
    client.flushall()
    store.load_functions(client)
    work = strongroom_claim(client)
    slots = slot_stream(list(range(1, ROOMS + 1)), claims + 300, seed=7)
    for slot in slots[:300]:
        work(slot)
    client.config_resetstat()
    cpu, aof = client.info("cpu"), client.info("persistence")["aof_current_size"]
    for slot in slots[300:]:
        work(slot)
    cpu_after, stats = client.info("cpu"), client.info("commandstats")
    used = sum(cpu_after[f"used_cpu_{kind}"] - cpu[f"used_cpu_{kind}"] for kind in ("user", "sys"))
    return StoreCost(
        function_us=stats["cmdstat_fcall"]["usec"] / claims,
        cpu_us=used * 1e6 / claims,
        commands=sum(entry["calls"] for entry in stats.values()) / claims,
        aof_bytes=(client.info("persistence")["aof_current_size"] - aof) / claims,
    )


def round_trips_per_claim(client: redis.Redis, make: Callable[[redis.Redis], Callable]) -> int:
    client.flushall()
    store.load_functions(client)
    work = make(client)
    with store.round_trips() as trips:
        for slot in slot_stream([1], 10, seed=99):
            work(slot)
    return trips.count // 10


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--claims", type=int, default=3200, help="claims per 16-client run is a quarter of this"
    )
    options = parser.parse_args()
    data_dir = Path(tempfile.mkdtemp(prefix="sr-bench-"))
    try:
        client = store.connect(embedded.ensure_running(data_dir))
        store.load_functions(client)
        info = client.info("server")
        version = info.get("valkey_version", info.get("redis_version"))
        print(
            f"Strongroom booking benchmark: Valkey {version}, {ROOMS} rooms, season "
            f"{DAYS[0]}..{DAYS[-1]} ({len(DAYS)} days); claims are 1 box x 1 hour of class C, "
            f"client threads in one process; claims/s are medians of 3 runs\n"
        )

        modes = [
            ("durable: WAITAOF, appendfsync always (the embedded default)", "aof", "always"),
            ("durable: WAITAOF, appendfsync everysec", "aof", "everysec"),
            ("not durable: STRONGROOM_DURABILITY=none", "none", "everysec"),
        ]
        for label, durability, fsync in modes:
            settings.STRONGROOM_DURABILITY = durability
            client.config_set("appendfsync", fsync)
            print(f"Strongroom claims/s, {label}")
            slow = durability == "aof" and fsync == "everysec"
            figures = throughput(client, strongroom_claim, options.claims, slow=slow)
            for name, rate in figures.items():
                print(f"  {name:<26} {rate:>9,.0f}")
            if not slow:
                cost = store_cost(client, 2000)
                print(
                    f"  the store's cost of a claim (one client): the function "
                    f"{cost.function_us:.0f} us, the process's CPU {cost.cpu_us:.0f} us, "
                    f"{cost.commands:.1f} commands, {cost.aof_bytes:,.0f} bytes of AOF"
                )
        settings.STRONGROOM_DURABILITY = "aof"
        client.config_set("appendfsync", "always")
        print(
            f"Strongroom round trips per claim: {round_trips_per_claim(client, strongroom_claim)}"
            " (FCALL, which writes the person and date indexes too, + WAITAOF, pipelined)"
        )

        print("\nSource design (HGET, OR in Python, HSET) claims/s")
        for name, rate in throughput(client, naive_work, options.claims).items():
            print(f"  {name:<26} {rate:>9,.0f}")
        print(
            f"Source design round trips per claim: {round_trips_per_claim(client, naive_work)}"
            " (one HGET + one HSET per date)"
        )

        settings.STRONGROOM_DURABILITY = "none"  # filling is about memory, not speed
        # One claim per room fills a whole season: far over the cap a buyer meets.
        settings.STRONGROOM_MAX_SLOTS = 100_000
        print("\nMEMORY USAGE of a fully booked season (inventory only; every room, every day)")
        print(
            f"  {'class':<6}{'bit limit':>14}{'strongroom':>14}{'ratio':>8}"
            f"{'source design':>16}{'ratio':>8}"
        )
        for cls, per_day in (("A", 1), ("B", 24), ("C", 2400)):
            limit = ROOMS * len(DAYS) * per_day / 8
            ours = fill_season(client, cls)
            theirs = fill_naive(client, cls)
            print(
                f"  {cls:<6}{limit:>12,.0f} B{ours:>12,} B{ours / limit:>7.2f}x"
                f"{theirs:>14,} B{theirs / limit:>7.2f}x"
            )

        settings.STRONGROOM_DURABILITY = "aof"
        print(
            "\nRace: 16 clients x 20 overlapping multi-slot claims (class C, one room, 2 days, "
            "hours 8-15, boxes 1-4)"
        )
        for label, naive, pause in (
            ("strongroom (one Redis Function)", False, 0.0),
            ("source design, no delay", True, 0.0),
            ("source design, 1 ms between read and write", True, 0.001),
        ):
            won, doubled, lost = race(client, naive=naive, pause=pause)
            print(
                f"  {label:<44} confirmed {won:>3}  doubled slots {doubled:>4}  "
                f"lost slots {lost:>4}"
            )
        client.close()
    finally:
        embedded.stop(data_dir)
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
