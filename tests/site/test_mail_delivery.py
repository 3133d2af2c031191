"""Mail delivery with per-message acknowledgement: a refusing mail server (aiosmtpd), retries
with backoff, dead letters on the staff page, and a dead sender's messages taken over."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import redis
from django.core.mail.backends.base import BaseEmailBackend
from django.test import Client

from strongroom import keyspace as ks
from strongroom.decoders import text_stream
from strongroom.outbox import GROUP, dead_letters_read, mailboxes, outbox_pending
from strongroom.outbox_delivery import RECOVER_MS, outbox_send
from tests.conftest import Someone
from tests.mail_support import mail_to_smtp, smtp_serving, with_address
from tests.site.test_after_mail import book


@dataclass
class MailServer:
    """An SMTP server that refuses (451) while `refuse` is set, and keeps what it accepted."""

    refuse: bool = True
    accepted: list[bytes] = field(default_factory=list)
    refused: int = 0

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        if self.refuse:
            self.refused += 1
            return "451 4.3.0 Mailbox busy, try later"
        self.accepted.append(envelope.content)
        return "250 OK"


@pytest.fixture
def smtp(settings: Any) -> Iterator[MailServer]:
    handler = MailServer()
    with smtp_serving(handler) as port:
        mail_to_smtp(settings, port)
        yield handler


def test_a_refused_message_is_retried_with_backoff_then_a_dead_letter_staff_retry_sends_it(
    r: redis.Redis,
    buyer: Someone,
    staff: Someone,
    smtp: MailServer,
    settings: Any,
    client_for: Callable[[Someone], Client],
) -> None:
    settings.STRONGROOM_MAIL_TRIES = 3
    with_address(r, buyer, "anna@example.test")
    booking = book(r, buyer)
    at = int(time.time() * 1000)
    assert outbox_send(client=r, at_ms=at).failed == 1
    (pending,) = outbox_pending(client=r)
    assert pending.attempts == 1 and "451" in pending.last_error
    assert pending.due_ms == at + 60_000  # the first retry a minute later
    assert outbox_send(client=r, at_ms=at + 59_000).handled == 0  # not due: not tried
    assert outbox_send(client=r, at_ms=at + 60_000).failed == 1
    (pending,) = outbox_pending(client=r)
    assert pending.attempts == 2 and pending.due_ms == at + 60_000 + 120_000  # then two
    last = outbox_send(client=r, at_ms=at + 180_000)
    assert (last.failed, last.dead) == (1, 1)  # the third delivery was the last
    assert smtp.refused == 3 and not smtp.accepted
    assert not outbox_pending(client=r) and r.hlen(ks.MAIL_TRIES.key()) == 0
    (letter,) = dead_letters_read(client=r)
    assert letter.kind == "confirm" and letter.attempts == 3 and "451" in letter.error

    page = client_for(staff).get("/staff/mail/").content.decode()
    assert booking.id in page and "Dead letters" in page and 'value="retry"' in page
    assert client_for(buyer).post("/staff/mail/dead/", {"letter": letter.key}).status_code == 403
    assert outbox_send(client=r, at_ms=at + 10**7).handled == 0  # a dead letter is not tried

    smtp.refuse = False
    answer = client_for(staff).post("/staff/mail/dead/", {"letter": letter.key, "action": "retry"})
    assert answer.status_code == 302
    assert not dead_letters_read(client=r)
    assert outbox_send(client=r).sent == 1
    (message,) = smtp.accepted
    assert booking.reference.encode() in message and b"anna@example.test" in message
    assert not outbox_pending(client=r)
    # Handled already: a second click says so and changes nothing.
    again = client_for(staff).post(
        "/staff/mail/dead/", {"letter": letter.key, "action": "discard"}, follow=True
    )
    assert "no longer among the dead letters" in again.content.decode()


def test_staff_can_discard_a_dead_letter(
    r: redis.Redis,
    buyer: Someone,
    staff: Someone,
    smtp: MailServer,
    settings: Any,
    client_for: Callable[[Someone], Client],
) -> None:
    settings.STRONGROOM_MAIL_TRIES = 1
    with_address(r, buyer, "anna@example.test")
    book(r, buyer)
    assert outbox_send(client=r).dead == 1
    (letter,) = dead_letters_read(client=r)
    answer = client_for(staff).post(
        "/staff/mail/dead/", {"letter": letter.key, "action": "discard"}
    )
    assert answer.status_code == 302 and not dead_letters_read(client=r)
    smtp.refuse = False
    assert outbox_send(client=r).handled == 0 and not smtp.accepted


def test_a_dead_senders_messages_are_taken_over_once_it_stopped_touching_them(
    r: redis.Redis, buyer: Someone, mail_dir: Path
) -> None:
    """A sender that read a message and died (never acknowledged it, never touches it again):
    another sender leaves it while it is fresh, takes it over after RECOVER_MS, sends it once."""
    with_address(r, buyer, "anna@example.test")
    booking = book(r, buyer)
    box = ks.BOOKING_OUTBOX.key(room="007")
    r.xgroup_create(box, GROUP, id="0")
    (stream,) = r.xreadgroup(GROUP, "a-sender-that-died", {box: ">"}, count=10)
    assert len(text_stream(stream[1])) == 1
    read_at = time.monotonic()
    assert outbox_send(client=r).handled == 0  # fresh: maybe still being sent
    deadline = read_at + 30
    while time.monotonic() < deadline:
        report = outbox_send(client=r)
        if report.handled:
            break
        time.sleep(0.1)
    assert report.sent == 1 and time.monotonic() - read_at >= RECOVER_MS / 1000
    (message,) = [p.read_bytes() for p in mail_dir.glob("*.eml")]
    assert booking.reference.encode() in message
    assert r.xlen(box) == 0 and not r.xpending(box, GROUP)["pending"]


class SlowBackend(BaseEmailBackend):
    """A mail server that takes longer than RECOVER_MS to accept a message."""

    def send_messages(self, email_messages: Any) -> int:
        time.sleep(RECOVER_MS / 1000 + 1.5)
        return len(email_messages)


def test_a_live_sender_keeps_what_it_works_on_however_slow_the_mail_server(
    r: redis.Redis, buyer: Someone, settings: Any
) -> None:
    """While a sender waits on a slow mail server, its messages are touched every second: no
    other sender sees them idle (nobody sends them twice)."""
    with_address(r, buyer, "anna@example.test")
    book(r, buyer)
    settings.EMAIL_BACKEND = f"{__name__}.SlowBackend"
    box = ks.BOOKING_OUTBOX.key(room="007")
    reports = []
    sending = threading.Thread(target=lambda: reports.append(outbox_send(client=r)))
    sending.start()
    time.sleep(RECOVER_MS / 1000 + 0.5)
    assert r.xpending(box, GROUP)["pending"] == 1
    assert r.xpending_range(box, GROUP, "-", "+", 10, idle=RECOVER_MS) == []
    sending.join()
    assert reports[0].sent == 1 and r.xlen(box) == 0


@pytest.fixture
def mail_dir(settings: Any, tmp_path: Path) -> Path:
    directory = tmp_path / "mail"
    settings.STRONGROOM_MAIL_DIR = directory
    settings.EMAIL_BACKEND = "strongroom.mail.FilePerMessageBackend"
    return directory


def test_a_store_that_goes_away_mid_pass_counts_no_try_against_the_message(
    r: redis.Redis, buyer: Someone, mail_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A render that finds no store is not the message's failure: the pass ends, no try or
    backoff is recorded, and the message goes out with the next pass that has a store."""
    import booking.web.mail as booking_mail

    with_address(r, buyer, "anna@example.test")
    book(r, buyer)

    def store_away(*args: Any, **kwargs: Any) -> None:
        raise redis.ConnectionError("the store went away")

    with monkeypatch.context() as patched:
        patched.setattr(booking_mail, "booking_get", store_away)
        with pytest.raises(redis.ConnectionError):
            outbox_send(client=r)
    assert r.hlen(ks.MAIL_TRIES.key()) == 0 and not dead_letters_read(client=r)
    (pending,) = outbox_pending(client=r)
    assert pending.attempts == 0
    # Taken up again (by whichever sender) once it has not been touched for RECOVER_MS.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not outbox_send(client=r).sent:
        time.sleep(0.2)
    assert len(list(mail_dir.glob("*.eml"))) == 1


@pytest.mark.parametrize(
    "actions", [["retry"] * 10, ["retry", "discard"] * 5], ids=["retry", "mixed"]
)
def test_ten_presses_at_once_on_one_dead_letter_queue_it_once(
    r: redis.Redis,
    buyer: Someone,
    staff: Someone,
    smtp: MailServer,
    settings: Any,
    client_for: Callable[[Someone], Client],
    actions: list[str],
) -> None:
    """Two staff tabs, a double click: the first press takes the letter, every other one finds
    it gone and says so; the mail goes out once."""
    settings.STRONGROOM_MAIL_TRIES = 1
    with_address(r, buyer, "anna@example.test")
    book(r, buyer)
    assert outbox_send(client=r).dead == 1
    (letter,) = dead_letters_read(client=r)
    smtp.refuse = False
    tabs = [client_for(staff) for _ in actions]
    start = threading.Barrier(len(tabs))
    said: list[str] = []

    def press(tab: Client, action: str) -> None:
        start.wait()
        answer = tab.post("/staff/mail/dead/", {"letter": letter.key, "action": action})
        assert answer.status_code == 302
        said.extend(str(m) for m in answer.wsgi_request._messages)  # type: ignore[attr-defined]

    threads = [
        threading.Thread(target=press, args=pair) for pair in zip(tabs, actions, strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    done = [m for m in said if "no longer among the dead letters" not in m]
    assert len(said) == len(actions) and len(done) == 1, said
    pipe = r.pipeline(transaction=False)
    for box in mailboxes():
        pipe.xlen(box)
    queued = sum(pipe.execute())
    assert queued == (1 if "queued again" in done[0] else 0)
    outbox_send(client=r)
    assert len(smtp.accepted) == queued
    assert not dead_letters_read(client=r)


def _server_errors(r: redis.Redis) -> int:
    """Every error reply the server has given since it started (INFO errorstats), over all
    nodes on a cluster."""
    stats = r.info("errorstats")
    nodes = stats.values() if stats and all(isinstance(v, dict) for v in stats.values()) else ()
    if nodes and all(isinstance(v, dict) and "count" not in v for v in nodes):
        stats = {k: v for node in nodes for k, v in node.items()}  # a cluster: one dict a node
    return sum(int(v["count"]) for k, v in stats.items() if k.startswith("errorstat_"))


def test_passes_over_outboxes_nobody_wrote_to_cost_the_server_no_errors(
    r: redis.Redis, buyer: Someone, smtp: MailServer
) -> None:
    """An idle site's sender looks at every room's outbox every few seconds: one that does not
    exist is asked whether it does, not read (a read of a missing stream is a NOGROUP error,
    and those were most of an idle server's replies). Once written to, it is read at once."""
    smtp.refuse = False
    before = _server_errors(r)
    for _ in range(3):
        assert outbox_send(client=r).handled == 0
    assert _server_errors(r) == before
    with_address(r, buyer, "anna@example.test")
    book(r, buyer)
    assert outbox_send(client=r).sent == 1  # the new outbox: its group made and read, one pass
    assert outbox_send(client=r).handled == 0
    assert _server_errors(r) == before


def test_a_store_away_while_a_pass_reads_ahead_is_one_log_line(
    r: redis.Redis,
    buyer: Someone,
    mail_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A failover while the sender read a batch's bookings ahead wrote a whole traceback to the
    log (a cluster probe): the store going away is said in one line, and the messages are
    sent all the same, each render reading its own."""
    import booking.web.mail as booking_mail

    with_address(r, buyer, "anna@example.test")
    book(r, buyer)

    def store_away(*args: Any, **kwargs: Any) -> None:
        raise redis.ConnectionError("Error 111 connecting to 127.0.0.1:55261. Connection refused.")

    monkeypatch.setattr(booking_mail, "read_together", store_away)
    with caplog.at_level("WARNING", logger="strongroom.outbox_delivery"):
        assert outbox_send(client=r).sent == 1
    (line,) = [rec for rec in caplog.records if "not read ahead" in rec.getMessage()]
    assert line.exc_info is None and "(ConnectionError)" in line.getMessage()
    assert len(list(mail_dir.glob("*.eml"))) == 1
