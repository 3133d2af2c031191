"""A buyer process for tests/booking/engine/test_booking_move_crash.py: moves its bookings round
and round their three places (A, A' in the same room, B in a room shared with other buyers)
through whatever kill -9 the test does to the store. A move that fails (the store went away)
is not retried: the buyer saw an error page and moves on. Prints "ready".

    python -m tests.booking_move_crash_worker <store url> <booking id>... -- <rounds>
"""

from __future__ import annotations

import sys
import time

import django


def places(index: int) -> list[dict[str, object]]:
    """Booking `index`'s three places: A and A' (room 1 + index // 10, same hours), then B
    (room 20, shared: two bookings aim at each hour)."""
    room, hour = 1 + index // 10, index % 10
    return [
        {"room": room, "dates": (3,), "hour_start": hour, "hour_end": hour + 1},
        {"room": room, "dates": (5,), "hour_start": hour, "hour_end": hour + 1},
        {"room": 20, "dates": (4,), "hour_start": index // 2, "hour_end": index // 2 + 1},
    ]


def main() -> None:
    django.setup()
    import redis

    from booking.engine.bookings import booking_get
    from booking.engine.moves import booking_move
    from strongroom import durable, store
    from tests.booking_support import NOW, request

    url = sys.argv[1]
    split = sys.argv.index("--")
    mine = {int(arg.split(":")[0]): arg.split(":")[1] for arg in sys.argv[2:split]}
    rounds = int(sys.argv[split + 1])
    client: redis.Redis | None = None
    print("ready", flush=True)
    for turn in range(rounds):
        for index, booking_id in list(mine.items()):
            target = places(index)[turn % 3]
            try:
                if client is None:
                    client = store.connect(url)
                now_is = booking_get(client=client, booking_id=booking_id)
                if now_is is None:
                    continue  # half way through a move: the recovery settles it
                mine[index] = now_is.id
                result = booking_move(
                    client=client, booking_id=now_is.id,
                    request=request("B", **target),  # type: ignore[arg-type]
                    actor_id=now_is.owner_id, actor_is_staff=False, now=NOW,
                )  # fmt: skip
                if result.ok and result.booking is not None:
                    mine[index] = result.booking.id
            except (redis.RedisError, durable.NotDurable, OSError):
                if client is not None:
                    client.close()
                client = None
                time.sleep(0.01)


if __name__ == "__main__":
    main()
