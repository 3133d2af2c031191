"""Receipts through crashes: the store killed (-9) ten times while buyers book, and a primary of
a 3-primary cluster killed. Every confirmed booking gets its receipt; a crash sends again at
most what was in flight; sending resumes within seconds of the store answering."""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from django.core.mail.backends.base import BaseEmailBackend

from booking.domain.keys import RoomKeys
from booking.domain.rules import booking_new_id
from booking.engine.claims import booking_claim
from strongroom import embedded, embedded_cluster, store
from strongroom.embedded_cluster import LocalCluster
from strongroom.keyspace import PERSON
from strongroom.outbox_delivery import in_flight
from strongroom.outbox_sender import sender_loop
from tests.booking_support import NOW, request

BUYERS = 4
KILLS = 10
PACE_S = 0.25  # between a buyer's bookings: receipts are rendered (and .ics built) as fast
_received: list[str] = []  # the references of the receipts the mail server took
_received_lock = threading.Lock()


class CountingBackend(BaseEmailBackend):
    """The mail server: keeps each receipt's booking reference."""

    def send_messages(self, email_messages: Any) -> int:
        for message in email_messages:
            found = re.search(r"B-[A-Z0-9]{4}-[A-Z0-9]{4}", str(message.subject))
            with _received_lock:
                _received.append(found.group(0) if found else str(message.subject))
        return len(email_messages)


def received() -> list[str]:
    with _received_lock:
        return list(_received)


def wait_for(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


class Run:
    """Buyers booking class B hours (each buyer their own rooms) and the site's sender loop,
    on whatever store settings.REDIS_URL names."""

    def __init__(self, client: redis.Redis) -> None:
        for n in range(BUYERS):
            client.hset(
                PERSON.key(person_id=101 + n),
                mapping={"username": f"buyer{n}", "email": f"b{n}@example.test",
                         "email_verified": "1", "lang": "en"},
            )  # fmt: skip
        self.confirmed: list[str] = []
        self.stop = threading.Event()
        self.sender_stop = threading.Event()
        self.threads = [threading.Thread(target=self._buy, args=(n,)) for n in range(BUYERS)]
        self.sender = threading.Thread(target=sender_loop, kwargs={"stop": self.sender_stop})
        self.in_flight_max = 0
        self.watch = threading.Thread(target=self._watch)

    def start(self) -> None:
        with _received_lock:
            _received.clear()
        for thread in [*self.threads, self.sender, self.watch]:
            thread.start()

    def stop_all(self) -> None:
        """Whatever happened: no buyer, sender or watcher outlives the test."""
        self.stop.set()
        self.sender_stop.set()
        for thread in [*self.threads, self.sender, self.watch]:
            if thread.is_alive():
                thread.join(timeout=30)

    def _buy(self, n: int) -> None:
        rooms = range(1 + n * 60, 61 + n * 60)
        slots = [(r, h, d) for d in range(2, 7) for r in rooms for h in range(24)]
        for room, hour, day in slots:
            if self.stop.is_set():
                return
            req = request("B", room=room, dates=(day,), hour_start=hour, hour_end=hour + 1)
            try:
                result = booking_claim(
                    client=store.get_store(), owner_id=str(101 + n), request=req,
                    booking_id=booking_new_id(room=room), now=NOW,
                )  # fmt: skip
            except Exception:  # the store is away: this slot's outcome is unknown; go on
                time.sleep(0.05)
                continue
            if result.ok and result.booking is not None:
                self.confirmed.append(result.booking.reference)
            time.sleep(PACE_S)

    def _watch(self) -> None:
        while not self.sender_stop.is_set():
            self.in_flight_max = max(self.in_flight_max, in_flight())
            time.sleep(0.002)

    def crash_window(self) -> None:
        """Start counting what is in flight around one crash."""
        self.in_flight_max = in_flight()

    def finish(self) -> tuple[list[str], Counter[str]]:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=60)
        confirmed = set(self.confirmed)
        # Every receipt, however long the sender takes to find the last ones again after the
        # kills: the bound is a liveness one (a minute was missed once or twice in many runs,
        # on a busy machine; how long it took is printed).
        started = time.monotonic()
        assert wait_for(lambda: confirmed <= set(received()), timeout=180), (
            f"{len(confirmed - set(received()))} confirmed bookings without a receipt"
        )
        print(f"every receipt {time.monotonic() - started:.1f} s after the buyers stopped")
        self.sender_stop.set()
        self.sender.join(timeout=30)
        self.watch.join(timeout=5)
        return self.confirmed, Counter(received())


def resumed_after(count_before: int) -> float:
    """Seconds until the mail server takes one more message than `count_before`."""
    started = time.monotonic()
    assert wait_for(lambda: len(received()) > count_before, timeout=30), "sending did not resume"
    return time.monotonic() - started


@pytest.mark.long
def test_ten_kills_of_the_store_lose_no_receipt_and_repeat_only_what_was_in_flight(
    one_server: redis.Redis, tmp_path: Path, settings: Any
) -> None:
    settings.EMAIL_BACKEND = f"{__name__}.CountingBackend"
    data_dir = tmp_path / "one-server"
    run = Run(one_server)
    run.start()
    try:
        in_flight_at_crashes, resumes = kill_again_and_again(run, data_dir)
        confirmed, receipts = run.finish()
    finally:
        run.stop_all()
    duplicates = sum(count - 1 for count in receipts.values() if count > 1)
    print(
        f"\n{KILLS} kills: {len(confirmed)} confirmed, {sum(receipts.values())} receipts, "
        f"{duplicates} sent twice, {in_flight_at_crashes} in flight at the crashes; sending "
        f"resumed {min(resumes):.2f}-{max(resumes):.2f} s after the store answered"
    )
    assert len(confirmed) > KILLS
    assert duplicates <= in_flight_at_crashes
    # Sending resumed after every kill (resumed_after waits up to 30 s): how soon is printed
    # above, not asserted; it is a second or two on a quiet machine and more on a busy one
    # (5.05 s once under the whole suite), and the suite times nothing.
    assert len(resumes) == KILLS


def kill_again_and_again(run: Run, data_dir: Path) -> tuple[int, list[float]]:
    """KILLS times: kill -9 the store while buyers book, start it again, wait for the next
    mail. Returns the messages in flight at the crashes, and the seconds to each next mail."""
    in_flight_at_crashes = 0
    resumes = []
    for _kill in range(KILLS):
        assert wait_for(lambda: len(run.confirmed) > 0, timeout=10)
        time.sleep(0.6)
        run.crash_window()
        pid = embedded.server_pid(data_dir)
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        assert wait_for(lambda: not embedded.answers(data_dir), timeout=10)
        time.sleep(0.3)  # the sender notices, buyers fail
        in_flight_at_crashes += run.in_flight_max
        embedded.ensure_running(data_dir)
        before = len(received())
        resumes.append(resumed_after(before))
    return in_flight_at_crashes, resumes


@pytest.fixture
def cluster(tmp_path: Path, settings: Any) -> Iterator[LocalCluster]:
    """Three primaries, each with one replica, as the site's store."""
    running = embedded_cluster.cluster_start(tmp_path / "cluster", primaries=3, replicas=1)
    settings.REDIS_URL = running.url
    settings.STRONGROOM_DURABILITY = "aof+replica"
    store.reset_store()
    try:
        store.load_functions(store.get_store())
        yield running
    finally:
        store.reset_store()
        running.stop()


def test_a_killed_primary_loses_no_receipt_and_repeats_only_what_was_in_flight(
    cluster: LocalCluster, settings: Any
) -> None:
    settings.EMAIL_BACKEND = f"{__name__}.CountingBackend"
    client = store.get_store()
    run = Run(client)
    run.start()
    try:
        counts = kill_a_primary(run, cluster, client)
    finally:
        run.stop_all()
    confirmed, receipts, in_flight_at_crash, failover_s, resume_s = counts
    duplicates = sum(count - 1 for count in receipts.values() if count > 1)
    print(
        f"\nprimary killed: {len(confirmed)} confirmed, {sum(receipts.values())} receipts, "
        f"{duplicates} sent twice, {in_flight_at_crash} in flight at the crash; the shard "
        f"answered after {failover_s:.1f} s, sending resumed {resume_s:.2f} s later"
    )
    assert duplicates <= in_flight_at_crash
    # Sending resumed (`resumed_after` asserts it within 30 s); how soon is a figure of this
    # machine's load, printed above, not a timed assertion (5.13 s failed "< 5" on a busy run).


def kill_a_primary(
    run: Run, cluster: LocalCluster, client: redis.Redis
) -> tuple[list[str], Counter[str], int, float, float]:
    """Kill -9 the primary of room 1 while buyers book; its replica takes over; the killed node
    comes back as a replica. Returns what `Run.finish` does, the messages in flight at the
    crash, the seconds to the failover and from it to the next mail."""
    assert wait_for(lambda: len(run.confirmed) > 20, timeout=30)
    victim_port = client.get_node_from_key(RoomKeys(1).ledger).port  # type: ignore[attr-defined]
    victim = cluster.node_at(victim_port)
    replica = next(
        node.client()
        for node in cluster.replicas
        if node.client().info("replication")["master_port"] == victim_port
    )
    run.crash_window()
    cluster.kill(victim)
    before = len(received())
    started = time.monotonic()
    # The shard answers again once its replica took over.
    assert wait_for(lambda: replica.info("replication")["role"] == "master", timeout=60)
    failover_s = time.monotonic() - started
    in_flight_at_crash = run.in_flight_max
    resume_s = resumed_after(before)
    cluster.restart(victim)
    confirmed, receipts = run.finish()
    return confirmed, receipts, in_flight_at_crash, failover_s, resume_s


class SlowBackend(CountingBackend):
    """A mail server that takes half a second to say yes to each message."""

    def send_messages(self, email_messages: Any) -> int:
        time.sleep(0.5)
        return super().send_messages(email_messages)


def test_a_sender_stopped_at_exit_finishes_its_message_and_begins_no_other(
    r: redis.Redis, settings: Any
) -> None:
    """A worker leaving at once (its master killed: "Parent changed") stops its sender at exit:
    the message the mail server is taking is acknowledged, no other is begun, and the next
    sender sends each of the rest once. Cut off in the middle, the thread used to leave a
    message taken but not acknowledged, which the next sender sent again."""
    from strongroom.outbox import outbox_pending
    from strongroom.outbox_delivery import outbox_send
    from strongroom.outbox_sender import sender_start, sender_stop

    settings.EMAIL_BACKEND = f"{__name__}.SlowBackend"
    with _received_lock:
        _received.clear()
    r.hset(PERSON.key(person_id=101), mapping={"username": "buyer0", "lang": "en",
           "email": "b0@example.test", "email_verified": "1"})  # fmt: skip
    made = [
        booking_claim(
            client=r,
            owner_id="101",
            request=request("A", room=room, dates=(5,)),
            booking_id=booking_new_id(room=room),
            now=NOW,
        )
        for room in range(40, 46)
    ]
    assert all(m.ok for m in made)
    sender_start()
    try:
        assert wait_for(lambda: len(received()) >= 1, timeout=20)
    finally:
        assert sender_stop(timeout_s=10)
    sent_first = received()
    assert 1 <= len(sent_first) < len(made)
    pending = [p for p in outbox_pending(client=r) if p.kind == "confirm"]
    assert len(pending) == len(made) - len(sent_first), "a message sent is acknowledged"
    time.sleep(3.2)  # what the stopped sender had taken is anyone's again (RECOVER_MS)
    outbox_send(client=r)
    assert sorted(Counter(received()).values()) == [1] * len(made)
