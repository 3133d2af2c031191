"""Today's new pages while the store is stopped (SIGSTOP), through the real served site: "Book
it" on a priority hold, its Book form, the map's refresh with a token, a move, a dead letter's
retry. Each answers 503 with its page (never a 500), and once the store answers again the same
presses do their work once."""

from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path

from booking.domain.rules import booking_new_id
from strongroom import embedded
from strongroom import keyspace as ks
from strongroom.store import connect
from tests.booking.web.test_priority_book_it import freed
from tests.conftest import person_make
from tests.store.test_store_stall import (
    Browser,
    served_on_embedded,
    servers_on,
    status_of,
    wait_for,
)


def test_the_new_pages_answer_503_in_a_stall_and_work_once_after(tmp_path: Path) -> None:
    with served_on_embedded(tmp_path) as (_site, base):
        store = connect(embedded.url_for(tmp_path))
        owner, waiter = person_make(store, "owner_one"), person_make(store, "waiter_two")
        rival, desk = (
            person_make(store, "rival_three"),
            person_make(store, "desk_four", is_staff=True),
        )
        (hold_id,) = freed(store, owner, waiter, [71]).values()
        letter = {"box": ks.MAIL_OUTBOX.key(), "member": "reset|1|x", "attempts": 3,
                  "first": 1, "at": 2, "error": "451"}  # fmt: skip
        store.hset(ks.MAIL_DEAD.key(), "k1", json.dumps(letter))
        browsers = {}
        for someone in (waiter, rival, desk):
            browsers[someone.username] = Browser(base)
            browsers[someone.username].log_in(someone.username, someone.password)
        buyer, other, staff = (browsers[p.username] for p in (waiter, rival, desk))
        status, page = buyer.request("/book/find/?cls=A&date=2026-12-05")
        assert status == 200
        poll = re.search(r'id="map-poll" hidden data-hx-get="([^"]+)"', page)
        assert poll is not None
        refresh = poll.group(1).replace("&amp;", "&")
        slot = {"cls": "A", "room": "71", "date": "2026-12-05"}
        [pid] = servers_on(tmp_path)

        os.kill(pid, signal.SIGSTOP)
        try:
            stalled = {
                "book it": buyer.request(f"/book/confirm/{hold_id}/"),
                "refresh": other.request(refresh),
                "refresh, junk token": other.request(refresh.split("seen=")[0] + "seen=%FF%00"),
                "rival claim": other.request(
                    "/book/claim/", {**slot, "booking_id": booking_new_id(room=71)}
                ),
                "retry": staff.request("/staff/mail/dead/", {"letter": "k1", "action": "retry"}),
                "desk": staff.request("/staff/desk/"),
            }
        finally:
            os.kill(pid, signal.SIGCONT)
        assert {name: s for name, (s, _) in stalled.items()} == dict.fromkeys(stalled, 503)
        assert wait_for(lambda: status_of(base, "/healthz") == 200)

        status, page = buyer.request(f"/book/confirm/{hold_id}/")
        assert status == 200, page[:300]
        form = re.search(r'name="booking_id" value="([^"]+)"', page)
        assert form is not None
        book = {**slot, "booking_id": form.group(1), "hold_id": hold_id}
        assert buyer.request("/book/claim/", book)[0] == 302
        assert buyer.request("/book/claim/", book)[0] == 302  # pressed again: the same booking
        assert (
            other.request("/book/claim/", {**slot, "booking_id": booking_new_id(room=71)})[0] == 409
        )
        assert len(store.keys("*:booking:071-*")) == 2  # the owner's cancelled one and this
        assert staff.request("/staff/mail/dead/", {"letter": "k1", "action": "retry"})[0] == 302
        assert staff.request("/staff/mail/dead/", {"letter": "k1", "action": "retry"})[0] == 302
        assert store.hlen(ks.MAIL_DEAD.key()) == 0
        store.close()
