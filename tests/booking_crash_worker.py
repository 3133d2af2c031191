"""A buyer process for tests/booking/engine/test_booking_crash_visibility.py: claims slots one
after the other until it has tried them all, through whatever kill -9 the test does to the
store. A claim that fails (the store went away) is not retried: the buyer saw an error page
and moves on, as people do. Prints "ready", then one confirmed booking id per line.

    python -m tests.booking_crash_worker <store url> <owner> <first room> <inline|pending> <n>
"""

from __future__ import annotations

import sys
import time

import django


def main() -> None:
    django.setup()
    import redis

    from booking.domain.rules import booking_new_id
    from booking.engine.claims import booking_claim
    from strongroom import durable, store
    from tests.booking_support import NOW, request

    url, owner, first_room, mode, count = sys.argv[1:6]
    client: redis.Redis | None = None
    print("ready", flush=True)
    for i in range(int(count)):
        # 160 slots a room: days 3..10, hours 0..19, class B.
        room, day, hour = int(first_room) + i // 160, 3 + (i // 20) % 8, i % 20
        req = request("B", room=room, dates=(day,), hour_start=hour, hour_end=hour + 1)
        try:
            if client is None:
                client = store.connect(url)
                if mode == "pending":  # the cluster path on this one server
                    client._strongroom_tags_may_mix = False  # type: ignore[attr-defined]
            result = booking_claim(
                client=client, owner_id=owner, request=req,
                booking_id=booking_new_id(room=room), now=NOW,
            )  # fmt: skip
            if result.ok and result.booking is not None:
                print(result.booking.id, flush=True)
        except (redis.RedisError, durable.NotDurable, OSError):
            if client is not None:
                client.close()
            client = None
            time.sleep(0.01)


if __name__ == "__main__":
    main()
