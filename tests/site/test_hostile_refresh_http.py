"""The map's refresh through the served site with many clients at once, each sending the page's
token or a damaged one while rooms are booked: 200 (the changes or every result) or 204, never a
500, and the page's own token still finds the rooms that changed."""

from __future__ import annotations

import re
import threading
import time
import urllib.error
import urllib.request

import redis

from booking.domain.parser import slot_request_parse
from booking.domain.rules import booking_new_id
from booking.engine.claims import booking_claim
from tests.booking_support import day

CLIENTS = 20
QUERY = "/book/find/?cls=A&date=2026-12-14"


def fetch(url: str) -> tuple[int, str]:
    request = urllib.request.Request(url, headers={"HX-Request": "true"})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return int(answer.status), answer.read().decode()
    except urllib.error.HTTPError as error:
        return int(error.code), error.read().decode()


def test_many_clients_with_good_and_damaged_tokens_get_answers_while_rooms_are_booked(
    r: redis.Redis, live_site: str
) -> None:
    status, page = fetch(live_site + QUERY)
    assert status == 200
    found = re.search(r'id="map-poll" hidden data-hx-get="([^"]+)"', page)
    assert found is not None
    poll = live_site + found.group(1).replace("&amp;", "&")
    token = poll.split("seen=")[1].split("&")[0]
    bare = poll.split("seen=")[0]
    damaged = [token[:-1], token + "A", token[::-1], "%FF" * 50, "A" * 3000, "%F0%9F%A6%84",
               token.replace("A", "-"), "", "{x}:*", token[:600] + "%0A" + token[601:]]  # fmt: skip
    statuses: list[int] = []
    start = threading.Barrier(CLIENTS + 1)

    def poller(n: int) -> None:
        start.wait()
        for i in range(12):
            url = poll if (n + i) % 3 == 0 else bare + "seen=" + damaged[(n + i) % len(damaged)]
            statuses.append(fetch(url)[0])

    threads = [threading.Thread(target=poller, args=(n,)) for n in range(CLIENTS)]
    for thread in threads:
        thread.start()
    start.wait()
    for room in range(20, 40):
        booking_claim(
            client=r, owner_id="101",
            request=slot_request_parse(cls="A", room=room, dates=[day(14)]),
            booking_id=booking_new_id(room=room),
        )  # fmt: skip
    for thread in threads:
        thread.join()
    assert len(statuses) == CLIENTS * 12
    assert set(statuses) <= {200, 204}, sorted(set(statuses))
    # Each worker keeps a map it read for STRONGROOM_MAP_CACHE_MS (maybe one read amid the
    # bookings): asked until it reads anew.
    for _ in range(100):
        status, part = fetch(poll)
        if status == 200 and "map-room-039" in part:
            break
        time.sleep(0.1)
    assert status == 200 and "map-room-020" in part and "map-room-039" in part
