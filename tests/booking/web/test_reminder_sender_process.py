"""The reminders through the real sender (`manage.py sendmail --loop`, a process of its own on
a fixed clock) and a real SMTP server (aiosmtpd): the sender is killed with -9 in the middle of
a message, started again, then killed and started again later the same day; every booking due
tomorrow is reminded exactly once, and nobody else is."""

from __future__ import annotations

import asyncio
import datetime as dt
import email
import email.header
import os
import re
import signal
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import redis
from django.conf import settings

from booking.domain.keys import RoomKeys
from booking.engine.cancel import booking_cancel
from strongroom import keyspace as ks
from tests.booking.web.test_reminder_mail import THE_DAY_BEFORE
from tests.booking_support import claim, request
from tests.conftest import Someone, person_make
from tests.mail_support import smtp_serving, with_address
from tests.store.test_store_stall import wait_for

ROOT = Path(__file__).resolve().parents[3]
HOLD_AT = 6  # the sender is killed while the mail server holds its 6th message
# The sender on a fixed clock (time-machine, ticking on from the given instant), in its own
# process, as `manage.py sendmail --loop` runs it.
SENDER = """
import datetime, sys
import time_machine
with time_machine.travel(datetime.datetime.fromisoformat(sys.argv[1]), tick=True):
    import django
    django.setup()
    from django.core.management import call_command
    call_command("sendmail", loop=True)
"""
REFERENCE = re.compile(r"B-[A-Z0-9]{4}-[A-Z0-9]{4}")


@dataclass
class MailServer:
    """An SMTP server that keeps what it accepted; the `hold_at`-th message waits at its
    recipient (before any of it is handed over) until `release` is set, then is refused."""

    started: int = 0
    accepted: list[email.message.Message] = field(default_factory=list)
    holding: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    hold_at: int = HOLD_AT  # 0: none held
    # When set: the sender whose message is the `kill_at`-th accepted is killed once the server
    # has it and before its "250" reaches the sender (the window no acknowledgement can close).
    kill_at: int = 0
    victim: subprocess.Popen[bytes] | None = None

    async def handle_RCPT(
        self, server: Any, session: Any, envelope: Any, address: str, options: Any
    ) -> str:
        if not envelope.rcpt_tos:
            self.started += 1
            if self.started == self.hold_at:
                self.holding.set()
                while not self.release.is_set():
                    await asyncio.sleep(0.01)
                return "451 4.3.0 try later"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        with self.lock:
            self.accepted.append(email.message_from_bytes(envelope.content))
            kill = len(self.accepted) == self.kill_at and self.victim is not None
        if kill:
            assert self.victim is not None
            kill_9(self.victim)
        return "250 OK"

    def reminders(self) -> list[tuple[str, str]]:
        """(subject, plain text) of every reminder accepted."""
        with self.lock:
            messages = list(self.accepted)
        found = []
        for message in messages:
            subject = str(email.header.make_header(email.header.decode_header(message["Subject"])))
            if subject.startswith(("Tomorrow", "明天")):
                body = next(p for p in message.walk() if p.get_content_type() == "text/plain")
                found.append((subject, body.get_payload(decode=True).decode()))  # type: ignore[union-attr]
        return found

    def reminded(self) -> Counter[str]:
        """How many reminders each booking reference got."""
        found: Counter[str] = Counter()
        for subject, _text in self.reminders():
            match = REFERENCE.search(subject)
            found[match.group(0) if match else subject] += 1
        return found


@pytest.fixture
def smtp() -> Iterator[tuple[MailServer, int]]:
    handler = MailServer()
    with smtp_serving(handler) as port:
        try:
            yield handler, port
        finally:
            handler.release.set()


@pytest.fixture
def sender(
    tmp_path: Path, smtp: tuple[MailServer, int]
) -> Iterator[Callable[[dt.datetime], subprocess.Popen[bytes]]]:
    """A function: instant -> the sender started on the test store with its clock there."""
    env = {
        **os.environ,
        "REDIS_URL": str(settings.REDIS_URL),
        "STRONGROOM_DATA_DIR": str(tmp_path / "sender"),
        "EMAIL_URL": f"smtp://127.0.0.1:{smtp[1]}",
        "DEBUG": "0",
    }
    started: list[subprocess.Popen[bytes]] = []

    def start(at: dt.datetime) -> subprocess.Popen[bytes]:
        process = subprocess.Popen(
            [sys.executable, "-c", SENDER, at.isoformat()], cwd=ROOT, env=env,
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)


def kill_9(process: subprocess.Popen[bytes]) -> None:
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=10)


def test_the_real_sender_killed_mid_message_and_restarted_reminds_each_booking_once(
    r: redis.Redis,
    buyer: Someone,
    second_buyer: Someone,
    smtp: tuple[MailServer, int],
    sender: Callable[[dt.datetime], subprocess.Popen[bytes]],
) -> None:
    server, _port = smtp
    with_address(r, buyer, "anna@example.test", "en")
    with_address(r, second_buyer, "bo@example.test", "zh-hans")
    unconfirmed = person_make(r, "carl")
    owners = [str(buyer.id), str(second_buyer.id)]
    due = []
    for room in range(1, 21):  # first day tomorrow (December 3): reminded
        made = claim(r, request("A", room=room, dates=(3, 4)), owner=owners[room % 2])
        assert made.booking is not None
        due.append(made.booking.reference)
    later = claim(r, request("A", room=21, dates=(5,)), owner=owners[0])
    gone = claim(r, request("A", room=22, dates=(3,)), owner=owners[1])
    no_address = claim(r, request("A", room=23, dates=(3,)), owner=str(unconfirmed.id))
    assert later.booking and gone.booking and no_address.booking
    booking_cancel(
        client=r, booking_id=gone.booking.id, actor_id=owners[1], actor_is_staff=False,
        now=THE_DAY_BEFORE - dt.timedelta(days=1),
    )  # fmt: skip
    # The receipts and the cancellation mail are not what this test counts.
    for box in [ks.MAIL_OUTBOX.key(), *(RoomKeys(room).outbox for room in range(1, 24))]:
        r.delete(box)

    first = sender(THE_DAY_BEFORE)
    assert server.holding.wait(timeout=60), "the sender reached its 6th message"
    assert sum(server.reminded().values()) == HOLD_AT - 1
    kill_9(first)  # in the middle of the 6th message: its recipient given, no content yet
    server.release.set()

    second = sender(THE_DAY_BEFORE + dt.timedelta(minutes=1))
    assert wait_for(lambda: set(server.reminded()) >= set(due), timeout=90), server.reminded()
    # Killed once every message is acknowledged: a kill between the mail server's "250" and the
    # acknowledgement sends that one message again (with the same Message-ID: the test below),
    # which is not what this kill is about.
    assert wait_for(lambda: r.xlen(ks.MAIL_OUTBOX.key()) == 0, timeout=30)
    kill_9(second)

    # Later the same day (23:00), with one more booking due tomorrow: a new sender queues and
    # sends its reminder (the proof that it ran the day's pass) and nothing else again.
    sentinel = claim(r, request("A", room=24, dates=(3,)), owner=owners[0])
    assert sentinel.booking is not None
    third = sender(THE_DAY_BEFORE + dt.timedelta(hours=13))
    assert wait_for(lambda: sentinel.booking.reference in server.reminded(), timeout=90)  # type: ignore[union-attr]
    assert wait_for(lambda: r.xlen(ks.MAIL_OUTBOX.key()) == 0, timeout=30)
    kill_9(third)

    reminded = server.reminded()
    print(f"{sum(reminded.values())} reminders for {len(reminded)} bookings")
    assert reminded == Counter({reference: 1 for reference in [*due, sentinel.booking.reference]})
    # Each in its buyer's language (room 1, 3... are the second buyer's), with the code.
    languages = Counter("zh" if "明天" in text else "en" for _subject, text in server.reminders())
    assert languages == Counter({"en": 11, "zh": 10})


def test_a_message_the_server_took_before_the_sender_died_comes_again_with_its_message_id(
    r: redis.Redis,
    buyer: Someone,
    smtp: tuple[MailServer, int],
    sender: Callable[[dt.datetime], subprocess.Popen[bytes]],
) -> None:
    """SMTP gives no way to ask whether a message arrived: a sender killed after the server took
    a message and before it heard "250" sends it again. The copy carries the same Message-ID (so
    mail clients show one), and only that message comes twice."""
    server, _port = smtp
    server.hold_at = 0
    with_address(r, buyer, "anna@example.test", "en")
    due = []
    for room in range(1, 6):
        made = claim(r, request("A", room=room, dates=(3,)), owner=str(buyer.id))
        assert made.booking is not None
        due.append(made.booking.reference)
    for box in [ks.MAIL_OUTBOX.key(), *(RoomKeys(room).outbox for room in range(1, 6))]:
        r.delete(box)

    server.kill_at = 3
    server.victim = sender(THE_DAY_BEFORE)
    assert wait_for(lambda: server.victim is not None and server.victim.poll() is not None, 60)
    assert sum(server.reminded().values()) == 3

    again = sender(THE_DAY_BEFORE + dt.timedelta(minutes=1))
    assert wait_for(lambda: set(server.reminded()) >= set(due), timeout=90), server.reminded()
    assert wait_for(lambda: r.xlen(ks.MAIL_OUTBOX.key()) == 0, timeout=30)
    kill_9(again)

    with server.lock:
        reminders = [m for m in server.accepted if REFERENCE.search(str(m["Subject"]))]
    ids = Counter(str(m["Message-ID"]) for m in reminders)
    assert len(reminders) == 6 and len(ids) == 5, ids  # the third twice, under one Message-ID
    twice = [m for m in reminders if ids[str(m["Message-ID"])] == 2]
    assert len({REFERENCE.search(str(m["Subject"])).group(0) for m in twice}) == 1  # type: ignore[union-attr]
