"""The durable outbox: mail waits in the store until the mail server has taken it.

Whoever causes a message appends one small entry (`<kind>|<arg>|...`, field `m`) to an outbox
stream: account mail to `{mail}:queue`, booking mail to the room's own stream, appended by the
claim and cancel functions in the same atomic (and durable) call as the booking itself. Nothing
is rendered or sent during the request.

Every web process runs a sender (`sender_start`; or `manage.py sendmail`), a consumer of the
streams' one consumer group: `XREADGROUP` hands each new entry to one sender, which renders it
in its reader's language (the renderer plugged in for its kind, `RENDERERS`), sends it, and
acknowledges that one entry (`XACK` + `XDEL`) as soon as the mail server accepted it. No lease:
while a sender works on what it was handed, a keep-alive thread touches those entries every
second (`XCLAIM ... JUSTID`); a sender that dies stops touching them, and after RECOVER_MS
another one takes them over (`XPENDING ... IDLE`, then `XCLAIM` with the same minimum idle
time, so only one wins). A crash re-sends at most what was in flight.

A message that fails stays pending, marked idle at once, with its attempts and next try in
`{mail}:tries` (1, 2, 4 ... minutes apart, at most an hour); once the stream has delivered it
STRONGROOM_MAIL_TRIES times it moves to the dead letters (`{mail}:dead`), which staff retry or
discard on /staff/mail/. A renderer returning None (no verified address, booking gone) drops the
entry.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import redis
from django.conf import settings
from django.core.mail import EmailMessage, get_connection
from django.core.mail.backends.base import BaseEmailBackend

from strongroom import keyspace as ks
from strongroom.ahead import request_reads
from strongroom.clock import now_ms
from strongroom.plugins import Point
from strongroom.store import text_hash, text_values

logger = logging.getLogger(__name__)

Renderer = Callable[[redis.Redis, list[str]], EmailMessage | None]
# Reads, once per batch, what the renders of a kind's entries (their arguments) will read.
Preparer = Callable[[redis.Redis, list[list[str]]], None]


@dataclass(frozen=True)
class MailKind:
    """A kind of outbox entry: `render` turns an entry's arguments into a message. `prepare`,
    given the arguments of a batch's entries of that kind, may read ahead what their renders
    will read (strongroom/ahead.py: `read_together`), so that a batch of receipts takes a few
    round trips rather than a few per message."""

    kind: str
    render: Renderer
    prepare: Preparer | None = None


# Plugged by each app in its AppConfig.ready (strongroom/plugins.py).
RENDERERS: Point[MailKind] = Point("mail kinds", key=lambda k: k.kind)
# Also run `hook(client)` every SENDER_PERIOD_S, in one process at a time (e.g. the
# waiting-list sweep).
SENDER_HOOKS: Point[Callable[[redis.Redis], None]] = Point("sender hooks")

GROUP = "senders"
FIELD = "m"
BATCH = 200
FULL_PASS_COUNT = 4  # new entries read from each outbox on a full pass (a long one is woken)
RECOVER_MS = 3_000  # an entry no sender touched for this long is taken over
TOUCH_S = 1.0  # how often a sender touches what it is working on
FAILED_IDLE_MS = 10**9  # a failed entry is marked idle at once: no sender is working on it
FIRST_RETRY_MS = 60_000
LAST_RETRY_MS = 3_600_000
SENDER_PERIOD_S = 5.0
SENDER_GAP_S = 0.2  # at least this long between two passes of a process's sender, bar backlogs
SENDER_RETRY_S = 1.0  # after a pass that found no store
_ERROR_LIMIT = 300
# This process's name in the consumer group (unique per process: a restarted one is new).
CONSUMER = f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"


def entry(kind: str, *args: object) -> str:
    """An outbox entry: kind and arguments joined by `|` (arguments never contain it)."""
    parts = [kind, *(str(a) for a in args)]
    if any("|" in part for part in parts):
        raise ValueError("an outbox argument contains |")
    return "|".join(parts)


def tries_limit() -> int:
    """How many deliveries a message gets before it becomes a dead letter."""
    return int(getattr(settings, "STRONGROOM_MAIL_TRIES", 10))


def mail_queue(
    client: redis.Redis | redis.client.Pipeline, *, kind: str, args: tuple[object, ...]
) -> None:
    """Queue one account message (`{mail}:queue`); the caller may pass a pipeline."""
    client.xadd(ks.MAIL_OUTBOX.key(), {FIELD: entry(kind, *args)})
    sender_wake(ks.MAIL_OUTBOX.key())


def mailboxes() -> list[str]:
    """Every outbox: the accounts' one, then each room's."""
    rooms = [
        ks.BOOKING_OUTBOX.key(room=f"{n:03d}") for n in range(1, settings.STRONGROOM_ROOM_COUNT + 1)
    ]
    return [ks.MAIL_OUTBOX.key(), *rooms]


def _entry_ms(entry_id: str) -> int:
    return int(entry_id.split("-", 1)[0])


@dataclass(frozen=True)
class Tries:
    """What `{mail}:tries` keeps of a message that failed: 'attempts|first ms|next ms|error'."""

    attempts: int = 0
    first_ms: int = 0
    next_ms: int = 0
    error: str = ""

    @classmethod
    def parse(cls, value: str | None) -> Tries:
        if not value:
            return cls()
        attempts, first, due, error = ([*value.split("|", 3), "", "", ""])[:4]
        return cls(int(attempts or 0), int(first or 0), int(due or 0), error)

    def text(self) -> str:
        return f"{self.attempts}|{self.first_ms}|{self.next_ms}|{self.error}"


def tries_field(box: str, entry_id: str) -> str:
    return f"{box} {entry_id}"


@dataclass(frozen=True)
class Pending:
    """One queued message as staff see it."""

    mailbox: str
    member: str
    entry_id: str
    due_ms: int
    attempts: int = 0
    last_error: str = ""
    first_failure_ms: int = 0

    @property
    def kind(self) -> str:
        return self.member.split("|", 1)[0]


def outbox_pending(
    *, client: redis.Redis, limit: int = BATCH, boxes: Sequence[str] | None = None
) -> list[Pending]:
    """Queued messages (not yet acknowledged), the soonest due first, at most `limit`."""
    return outbox_view(client=client, limit=limit, boxes=boxes)[0]


def outbox_view(
    *, client: redis.Redis, limit: int = BATCH, boxes: Sequence[str] | None = None
) -> tuple[list[Pending], list[DeadLetter]]:
    """What staff see: the queued messages (the soonest due first, at most `limit`) and the
    dead letters. Two round trips: every outbox's oldest `limit` entries and the dead letters
    in one pipeline, then the tries of what was found."""
    boxes = mailboxes() if boxes is None else list(boxes)
    pipe = client.pipeline(transaction=False)
    for box in boxes:
        pipe.xrange(box, "-", "+", count=limit)
    pipe.hgetall(ks.MAIL_DEAD.key())
    *ranges, dead = pipe.execute()
    found = [
        (box, entry_id, fields.get(FIELD, ""))
        for box, reply in zip(boxes, ranges, strict=True)
        for entry_id, fields in reply or []
    ]
    letters = _dead_letters(dict(dead))
    if not found:
        return [], letters
    fields = [tries_field(box, entry_id) for box, entry_id, _ in found]
    out = []
    for (box, entry_id, member), value in zip(
        found, text_values(client.hmget(ks.MAIL_TRIES.key(), fields)), strict=True
    ):
        tries = Tries.parse(value)
        due = tries.next_ms or _entry_ms(entry_id)
        out.append(Pending(box, member, entry_id, due, tries.attempts, tries.error, tries.first_ms))
    out.sort(key=lambda p: p.due_ms)
    return out[:limit], letters


# --- dead letters ----------------------------------------------------------------------------


@dataclass(frozen=True)
class DeadLetter:
    """A message that failed STRONGROOM_MAIL_TRIES deliveries, kept for staff."""

    key: str  # its field in `{mail}:dead`
    mailbox: str
    member: str
    attempts: int
    first_failure_ms: int
    dead_ms: int
    error: str

    @property
    def kind(self) -> str:
        return self.member.split("|", 1)[0]


def dead_letters_read(*, client: redis.Redis) -> list[DeadLetter]:
    """Every dead letter, the most recent first."""
    return _dead_letters(text_hash(client.hgetall(ks.MAIL_DEAD.key())))


def _dead_letters(stored: dict[str, str]) -> list[DeadLetter]:
    found = []
    for key, value in stored.items():
        with contextlib.suppress(ValueError, KeyError, TypeError):
            data = json.loads(value)
            found.append(
                DeadLetter(
                    key,
                    data["box"],
                    data["member"],
                    int(data["attempts"]),
                    int(data["first"]),
                    int(data["at"]),
                    str(data["error"]),
                )
            )
    found.sort(key=lambda d: d.dead_ms, reverse=True)
    return found


def dead_letter_retry(*, client: redis.Redis, key: str) -> bool:
    """Queue a dead letter again, as a new message with its tries counted anew; False when it
    is no longer there (another staff member handled it)."""
    value = client.hget(ks.MAIL_DEAD.key(), key)
    if value is None:
        return False
    data = json.loads(value)
    if data.get("box") not in mailboxes():
        return False
    client.xadd(data["box"], {FIELD: data["member"]})
    client.hdel(ks.MAIL_DEAD.key(), key)
    sender_wake(data["box"])
    return True


def dead_letter_discard(*, client: redis.Redis, key: str) -> bool:
    """Forget a dead letter; False when it is no longer there."""
    return bool(client.hdel(ks.MAIL_DEAD.key(), key))


# --- one pass ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SendReport:
    sent: int = 0
    failed: int = 0
    dropped: int = 0
    dead: int = 0
    more: tuple[str, ...] = ()  # outboxes that may hold more new entries than this pass read

    @property
    def handled(self) -> int:
        """Messages this pass took up (sent, failed or dropped)."""
        return self.sent + self.failed + self.dropped


@dataclass(frozen=True)
class Delivery:
    """An entry handed to this sender: new, or taken over, or due again after a failure."""

    box: str
    entry_id: str
    member: str
    deliveries: int
    tries: Tries

    @property
    def field(self) -> str:
        return tries_field(self.box, self.entry_id)


def _no_group(reply: object) -> bool:
    return isinstance(reply, redis.ResponseError) and "NOGROUP" in str(reply)


def _groups_make(client: redis.Redis, boxes: Sequence[str]) -> list[str]:
    """Create the consumer group of the outboxes that exist (from their first entry: nothing
    written to them is missed); an outbox not yet written to has no key (empty costs nothing)
    and gets its group once it has one. Returns the outboxes that have a group now."""
    pipe = client.pipeline(transaction=False)
    for box in boxes:
        pipe.xgroup_create(box, GROUP, id="0")
    made = []
    for box, reply in zip(boxes, pipe.execute(raise_on_error=False), strict=True):
        if not isinstance(reply, Exception) or "BUSYGROUP" in str(reply):
            made.append(box)
        elif "requires the key to exist" not in str(reply):
            raise reply
    return made


def _take(
    client: redis.Redis, boxes: Sequence[str], at: int, count: int, *, again: bool = False
) -> tuple[list[Delivery], list[str]]:
    """What this sender is to send now from `boxes`: new entries (at most `count` from each),
    then entries due again (failed before, or left by a sender that stopped touching them).
    Also the outboxes that gave `count` new ones (more may wait)."""
    pipe = client.pipeline(transaction=False)
    for box in boxes:
        pipe.xreadgroup(GROUP, CONSUMER, {box: ">"}, count=count)
        pipe.xpending_range(box, GROUP, "-", "+", count, idle=RECOVER_MS)
    replies = pipe.execute(raise_on_error=False)
    missing = [box for box, reply in zip(boxes, replies[0::2], strict=True) if _no_group(reply)]
    taken: list[Delivery] = []
    stale: list[tuple[str, str, int]] = []
    full: list[str] = []
    for box, read, pending in zip(boxes, replies[0::2], replies[1::2], strict=True):
        if _no_group(read):
            continue
        for reply in (read, pending):
            if isinstance(reply, Exception):
                raise reply
        entries = [e for _, stream_entries in read or [] for e in stream_entries]
        if len(entries) >= count:
            full.append(box)
        taken += [Delivery(box, i, fields.get(FIELD, ""), 1, Tries()) for i, fields in entries]
        stale += [(box, p["message_id"], int(p["times_delivered"])) for p in pending]
    if stale:
        taken += _take_over(client, stale, at)
    made = _groups_make(client, missing) if missing and not again else []
    if made:  # an outbox's first entries: read at once, not on the next pass
        more, more_full = _take(client, made, at, count, again=True)
        taken, full = taken + more, full + more_full
    return taken, full


def _take_over(client: redis.Redis, stale: list[tuple[str, str, int]], at: int) -> list[Delivery]:
    """Claim the idle entries that are due (a failed one once its next try has come, one left
    by a dead sender at once). Only one sender wins an entry: XCLAIM checks the idle time."""
    fields = [tries_field(box, entry_id) for box, entry_id, _ in stale]
    tries = [Tries.parse(v) for v in text_values(client.hmget(ks.MAIL_TRIES.key(), fields))]
    due = [
        (box, entry_id, times, t)
        for (box, entry_id, times), t in zip(stale, tries, strict=True)
        if t.next_ms <= at
    ]
    if not due:
        return []
    pipe = client.pipeline(transaction=False)
    for box, entry_id, _, _ in due:
        pipe.xclaim(box, GROUP, CONSUMER, RECOVER_MS, [entry_id])
    taken = []
    for (box, _, times, t), claimed in zip(due, pipe.execute(), strict=True):
        for claimed_id, claimed_fields in claimed or []:
            if claimed_fields is None:  # deleted meanwhile
                continue
            taken.append(Delivery(box, claimed_id, claimed_fields.get(FIELD, ""), times + 1, t))
    return taken


class _InFlight:
    """The entries a pass is working on, touched every TOUCH_S by a thread of their own so that
    no other sender takes them over while this process lives (however slow the mail server)."""

    def __init__(self, client: redis.Redis, taken: list[Delivery]) -> None:
        self.client = client
        self.entries = {(d.box, d.entry_id) for d in taken}
        self.lock = threading.Lock()
        self.touched = time.monotonic()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="mail-touch", daemon=True)

    def __enter__(self) -> _InFlight:
        with _unacked_lock:
            _flights.add(self)
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()
        with _unacked_lock:
            _flights.discard(self)

    def done(self, delivery: Delivery) -> None:
        with self.lock:
            self.entries.discard((delivery.box, delivery.entry_id))

    def lost(self) -> bool:
        """True when this pass has not touched its entries for long enough that another sender
        may have taken them over (the store away, or this process stopped): stop sending."""
        return time.monotonic() - self.touched > RECOVER_MS / 2000

    def _run(self) -> None:
        while not self.stop.wait(TOUCH_S):
            with self.lock:
                by_box: dict[str, list[str]] = {}
                for box, entry_id in self.entries:
                    by_box.setdefault(box, []).append(entry_id)
            if not by_box:
                continue
            pipe = self.client.pipeline(transaction=False)
            for box, ids in by_box.items():
                pipe.xclaim(box, GROUP, CONSUMER, 0, cast("list[Any]", ids), justid=True)
            # The pass itself reports the store being away; here it only ages `touched`.
            with contextlib.suppress(Exception):
                pipe.execute()
                self.touched = time.monotonic()


# Sent, but the acknowledgement did not reach the store: acknowledged first on the next pass.
_unacked: list[tuple[str, str, bool]] = []
_unacked_lock = threading.Lock()
_flights: set[_InFlight] = set()


def in_flight() -> int:
    """How many messages this process has taken and not acknowledged (being sent, or sent with
    the acknowledgement not yet in the store): what a crash now could send twice."""
    with _unacked_lock:
        return len(_unacked) + sum(len(flight.entries) for flight in _flights)


def _ack(client: redis.Redis, box: str, entry_id: str, *, failed_before: bool) -> None:
    pipe = client.pipeline(transaction=False)
    pipe.xack(box, GROUP, entry_id)
    pipe.xdel(box, entry_id)
    if failed_before:
        pipe.hdel(ks.MAIL_TRIES.key(), tries_field(box, entry_id))
    pipe.execute()


def _ack_left_over(client: redis.Redis) -> None:
    with _unacked_lock:
        left = list(_unacked)
        _unacked.clear()
    for done, item in enumerate(left):
        try:
            _ack(client, item[0], item[1], failed_before=item[2])
        except Exception:
            with _unacked_lock:
                _unacked.extend(left[done:])
            raise


def _prepare(client: redis.Redis, members: list[str]) -> None:
    """Run each kind's preparer over the batch's entries of that kind. One that fails only
    costs time: each render then reads what it needs itself."""
    by_kind: dict[str, list[list[str]]] = {}
    for member in members:
        kind, *args = member.split("|")
        by_kind.setdefault(kind, []).append(args)
    for kind, arguments in by_kind.items():
        plugged = RENDERERS.get(kind)
        prepare = plugged.prepare if plugged is not None else None
        if prepare is None:
            continue
        try:
            prepare(client, arguments)
        except Exception:
            logger.warning(
                "mail of kind %s not read ahead; each reads its own", kind, exc_info=True
            )


def _render(client: redis.Redis, member: str) -> EmailMessage | None:
    kind, *args = member.split("|")
    plugged = RENDERERS.get(kind)
    if plugged is None:
        raise LookupError(f"no renderer for outbox kind {kind!r}")
    return plugged.render(client, args)


def retry_at(attempts: int, at: int) -> int:
    """When a message that failed `attempts` times is tried again (after a failure at `at`)."""
    first = int(getattr(settings, "STRONGROOM_MAIL_FIRST_RETRY_MS", FIRST_RETRY_MS))
    return at + min(LAST_RETRY_MS, first * 2 ** max(0, attempts - 1))


def outbox_send(
    *, client: redis.Redis, at_ms: int | None = None, boxes: Sequence[str] | None = None
) -> SendReport:
    """Send what is new or due again in `boxes` (default: every outbox), acknowledging each
    message once the mail server took it; keep and reschedule the ones that fail."""
    at = now_ms() if at_ms is None else at_ms
    _ack_left_over(client)
    boxes = mailboxes() if boxes is None else list(boxes)
    if not boxes:
        return SendReport()
    count = FULL_PASS_COUNT if len(boxes) > BATCH // FULL_PASS_COUNT else BATCH // len(boxes)
    taken, full = _take(client, boxes, at, count)
    if not taken:
        return SendReport(more=tuple(full))
    connection = get_connection(fail_silently=False)
    try:
        with request_reads(), _InFlight(client, taken) as flight:
            _prepare(client, [d.member for d in taken])
            counts = _deliver(client, taken, at, connection, flight)
    finally:
        with contextlib.suppress(Exception):  # a broken connection is already reported
            connection.close()
    return SendReport(*counts, more=tuple(full))


def _deliver(
    client: redis.Redis,
    taken: list[Delivery],
    at: int,
    connection: BaseEmailBackend,
    flight: _InFlight,
) -> tuple[int, int, int, int]:
    """Render and send `taken` in order, each acknowledged once sent. Returns (sent, failed,
    dropped, dead)."""
    sent = failed = dropped = dead = 0
    for delivery in taken:
        if flight.lost():
            break
        try:
            message = _render(client, delivery.member)
            if message is not None:
                message.connection = connection
                message.send()
        except Exception as exc:
            failed += 1
            dead += _failed(client, delivery, exc, at)
            flight.done(delivery)
            continue
        flight.done(delivery)
        if message is None:
            dropped += 1
        else:
            sent += 1
        try:
            _ack(
                client, delivery.box, delivery.entry_id, failed_before=bool(delivery.tries.attempts)
            )
        except Exception:
            with _unacked_lock:
                _unacked.append((delivery.box, delivery.entry_id, bool(delivery.tries.attempts)))
            raise
    return sent, failed, dropped, dead


def _failed(client: redis.Redis, delivery: Delivery, exc: Exception, at: int) -> int:
    """Record a failure: tried again later, or (the last try) a dead letter. 1 if dead."""
    attempts = delivery.tries.attempts + 1
    first = delivery.tries.first_ms or at
    detail = f"{type(exc).__name__}: {exc}"[:_ERROR_LIMIT].replace("\n", " ").replace("\r", " ")
    if delivery.deliveries >= tries_limit():
        logger.warning("mail %s not sent (%d tries): a dead letter: %s",
                       delivery.member, attempts, detail)  # fmt: skip
        letter = {
            "box": delivery.box, "member": delivery.member, "attempts": attempts,
            "first": first, "at": at, "error": detail,
        }  # fmt: skip
        client.hset(ks.MAIL_DEAD.key(), delivery.field, json.dumps(letter))
        _ack(client, delivery.box, delivery.entry_id, failed_before=True)
        return 1
    logger.warning("mail %s not sent (attempt %d): %s", delivery.member, attempts, detail)
    tries = Tries(attempts, first, retry_at(attempts, at), detail)
    client.hset(ks.MAIL_TRIES.key(), delivery.field, tries.text())
    # Marked idle at once: not in flight any more, taken up again when its next try comes.
    client.xclaim(
        delivery.box, GROUP, CONSUMER, 0, [delivery.entry_id], idle=FAILED_IDLE_MS, justid=True
    )
    return 0


# --- the sender in every web process ---------------------------------------------------------

_wake = threading.Event()
_thread: threading.Thread | None = None
_thread_lock = threading.Lock()
EVERY_BOX = ""  # in the woken set: look at every outbox
_woken: set[str] = set()  # the outboxes this process wrote to since its sender last looked
_woken_lock = threading.Lock()


def sender_wake(*boxes: str) -> None:
    """Ask this process's sender to look now (no store round trip): at `boxes`, the outboxes
    the caller wrote to, or at every outbox when none is named."""
    with _woken_lock:
        _woken.update(boxes or (EVERY_BOX,))
    _wake.set()


def sender_woken() -> set[str]:
    """Take the outboxes woken since the last call (EVERY_BOX among them: look at all)."""
    with _woken_lock:
        woken = set(_woken)
        _woken.clear()
    return woken


def _hooks_run(client: redis.Redis) -> None:
    # The hooks' turn passes from process to process: the first to ask in a period runs them.
    # (Its expiry is the period itself, never released: a crash costs nothing.)
    hooks = list(SENDER_HOOKS)
    if hooks and client.set(ks.MAIL_SWEEP.key(), CONSUMER, nx=True, px=int(SENDER_PERIOD_S * 1000)):
        for hook in hooks:
            hook(client)


def sender_pass(*, client: redis.Redis, boxes: Sequence[str] | None = None) -> SendReport:
    """One pass: a full one (no `boxes`) runs the hooks when it is their turn, then reads every
    outbox; else only `boxes`."""
    if boxes is None:
        _hooks_run(client)
    return outbox_send(client=client, boxes=boxes)


def sender_pause(report: SendReport | None) -> float:
    """How long the sender rests after a pass (`report`; None: it failed): not at all after a
    full batch, as more may be due; else SENDER_GAP_S, so that wakes within it share the next
    pass (a burst of bookings costs a few reads of the outboxes it wrote to a second, not one per
    booking); SENDER_RETRY_S after a failed pass."""
    if report is None:
        return SENDER_RETRY_S
    return 0.0 if report.handled >= BATCH or report.more else SENDER_GAP_S


def sender_boxes(woken: set[str], *, full_due: bool) -> list[str] | None:
    """The outboxes a pass reads: None (all of them) when a full pass is due or was asked for,
    else the woken ones."""
    return None if full_due or EVERY_BOX in woken else sorted(woken)


def sender_loop(*, stop: threading.Event) -> None:
    """The sender: a pass when woken, a full one every SENDER_PERIOD_S, until `stop` is set."""
    from strongroom.store import UNAVAILABLE, StoreUnavailable, get_store

    last_full = float("-inf")  # the first pass reads every outbox
    away = False  # the store was away on the last pass: said once, not every second
    while not stop.is_set():
        _wake.wait(SENDER_PERIOD_S)
        _wake.clear()
        woken = sender_woken()
        # After a failed pass, every outbox: what was woken meanwhile may be anywhere.
        full_due = away or time.monotonic() - last_full >= SENDER_PERIOD_S
        boxes = sender_boxes(woken, full_due=full_due)
        if boxes == []:
            continue
        report: SendReport | None = None
        try:
            report = sender_pass(client=get_store(), boxes=boxes)
        except (*UNAVAILABLE, StoreUnavailable) as exc:  # store down or stalled: one line, no trace
            if not away:
                logger.warning("the mail sender found no store (%s); trying every second", exc)
        except Exception:
            logger.warning("the mail sender's pass failed; trying again", exc_info=True)
        else:
            if away:
                logger.warning("the mail sender found the store again")
        away = report is None
        if report is not None and boxes is None:
            last_full = time.monotonic()
        if report is not None and (report.handled >= BATCH or report.more):
            sender_wake(*(report.more or woken or ()))
        pause = sender_pause(report)
        if pause:
            time.sleep(pause)
        if report is None or not pause:
            _wake.set()


def sender_start() -> None:
    """Start this process's sender thread once (STRONGROOM_MAIL_SENDER)."""
    global _thread
    with _thread_lock:
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(
                target=sender_loop,
                kwargs={"stop": threading.Event()},
                name="mail-sender",
                daemon=True,
            )
            _thread.start()
