"""One pass of a mail sender over the outboxes (`strongroom.outbox`): take what is new, taken
over from a dead sender, or due again; render it (with what a batch reads ahead), send it,
acknowledge each message once the mail server took it, reschedule or bury the ones that fail.
While a pass works, its entries are touched every TOUCH_S so that no other sender takes them."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import redis
from django.core.mail import EmailMessage, get_connection
from django.core.mail.backends.base import BaseEmailBackend
from django.core.mail.utils import DNS_NAME

from strongroom import keyspace as ks
from strongroom.ahead import Command, pipeline_send, request_reads
from strongroom.clock import now_ms
from strongroom.outbox import (
    BATCH,
    CONSUMER,
    FULL_PASS_COUNT,
    GROUP,
    RENDERERS,
    Tries,
    mailboxes,
    pass_writes,
    retry_at,
    tries_field,
    tries_limit,
)
from strongroom.outbox_take import RECOVER_MS, Delivery, entries_take
from strongroom.store import UNAVAILABLE, StoreUnavailable

logger = logging.getLogger(__name__)

TOUCH_S = 1.0  # how often a sender touches what it is working on
FAILED_IDLE_MS = 10**9  # a failed entry is marked idle at once: no sender is working on it
_ERROR_LIMIT = 300


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
            # The lock is held until the touch is sent: an entry `done` takes out is never
            # touched after it (a failed one's idle mark would be undone).
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


# An acknowledgement to make: (outbox, entry id, whether it had failed before).
_Ack = tuple[str, str, bool]


def _acks(client: redis.Redis, acks: Sequence[_Ack]) -> None:
    """Acknowledge entries (one round trip); those it could not are acknowledged first on the
    next pass."""
    if not acks:
        return
    pipe = client.pipeline(transaction=False)
    for box, entry_id, failed_before in acks:
        pipe.xack(box, GROUP, entry_id)
        pipe.xdel(box, entry_id)
        if failed_before:
            pipe.hdel(ks.MAIL_TRIES.key(), tries_field(box, entry_id))
    try:
        pipe.execute()
    except Exception:
        with _unacked_lock:
            _unacked.extend(acks)
        raise


def _ack_left_over(client: redis.Redis) -> None:
    with _unacked_lock:
        left = list(_unacked)
        _unacked.clear()
    _acks(client, left)


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
        except (*UNAVAILABLE, StoreUnavailable) as away:  # an outage: one line, no trace
            logger.warning(
                "mail of kind %s not read ahead (%s); each reads its own", kind,
                type(away).__name__,
            )  # fmt: skip
        except Exception:
            logger.warning(
                "mail of kind %s not read ahead; each reads its own", kind, exc_info=True
            )


def _render(client: redis.Redis, member: str, writes: list[Command]) -> EmailMessage | None:
    """The entry's message (None: dropped); the writes its renderer asked for go to `writes`."""
    kind, *args = member.split("|")
    plugged = RENDERERS.get(kind)
    if plugged is None:
        raise LookupError(f"no renderer for outbox kind {kind!r}")
    token = pass_writes.set(writes)
    try:
        return plugged.render(client, args)
    finally:
        pass_writes.reset(token)


def outbox_send(
    *,
    client: redis.Redis,
    at_ms: int | None = None,
    boxes: Sequence[str] | None = None,
    stop: threading.Event | None = None,
) -> SendReport:
    """Send what is new or due again in `boxes` (default: every outbox), acknowledging each
    message once the mail server took it; keep and reschedule the ones that fail. Once `stop`
    is set, no further message is begun (those taken stay pending, for the next pass)."""
    at = now_ms() if at_ms is None else at_ms
    _ack_left_over(client)
    boxes = mailboxes() if boxes is None else list(boxes)
    if not boxes or (stop is not None and stop.is_set()):  # stopping: take nothing more
        return SendReport()
    count = FULL_PASS_COUNT if len(boxes) > BATCH // FULL_PASS_COUNT else BATCH // len(boxes)
    taken, full = entries_take(client, boxes, at, count)
    if not taken:
        return SendReport(more=tuple(full))
    connection = get_connection(fail_silently=False)
    try:
        with request_reads(), _InFlight(client, taken) as flight:
            _prepare(client, [d.member for d in taken])
            counts = _deliver(client, taken, at, connection, flight, stop)
    finally:
        with contextlib.suppress(Exception):  # a broken connection is already reported
            connection.close()
    return SendReport(*counts, more=tuple(full))


def message_id(delivery: Delivery) -> str:
    """The Message-ID of an entry's mail: the same on every try. A sender that dies after the
    mail server took a message and before its acknowledgement reached the store sends it again
    (SMTP offers no way to ask); with the same Message-ID, mail clients show it once."""
    box = hashlib.sha256(delivery.box.encode()).hexdigest()[:12]
    return f"<{delivery.entry_id}.{box}@{DNS_NAME}>"


def _deliver(
    client: redis.Redis,
    taken: list[Delivery],
    at: int,
    connection: BaseEmailBackend,
    flight: _InFlight,
    stop: threading.Event | None = None,
) -> tuple[int, int, int, int]:
    """Render and send `taken` in order, each acknowledged once sent; the dropped ones are
    acknowledged together at the end, after the writes their renderers asked for. Returns
    (sent, failed, dropped, dead)."""
    sent = failed = dead = 0
    dropped: list[Delivery] = []
    dropped_writes: list[Command] = []
    for delivery in taken:
        if flight.lost() or (stop is not None and stop.is_set()):
            break
        writes: list[Command] = []
        try:
            message = _render(client, delivery.member, writes)
            if message is not None:
                message.extra_headers.setdefault("Message-ID", message_id(delivery))
                message.connection = connection
                message.send()
        except (*UNAVAILABLE, StoreUnavailable):
            # The store, not the message, failed: no try is counted, the pass ends, and the
            # message (still pending) is taken up again once the store answers.
            raise
        except Exception as exc:
            failed += 1
            # Out of the touched entries first: a touch after the failure's idle mark would
            # make it look busy again, and its next try would wait for RECOVER_MS.
            flight.done(delivery)
            dead += _failed(client, delivery, exc, at)
            continue
        if message is None:
            # Still in flight (touched) until acknowledged with the pass's other drops.
            dropped.append(delivery)
            dropped_writes += writes
            continue
        flight.done(delivery)
        sent += 1
        pipeline_send(client, writes)
        _acks(client, [(delivery.box, delivery.entry_id, bool(delivery.tries.attempts))])
    # The writes first: an entry acknowledged is never rendered again.
    pipeline_send(client, dropped_writes)
    _acks(client, [(d.box, d.entry_id, bool(d.tries.attempts)) for d in dropped])
    for delivery in dropped:
        flight.done(delivery)
    return sent, failed, len(dropped), dead


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
        _acks(client, [(delivery.box, delivery.entry_id, True)])
        return 1
    logger.warning("mail %s not sent (attempt %d): %s", delivery.member, attempts, detail)
    tries = Tries(attempts, first, retry_at(attempts, at), detail)
    client.hset(ks.MAIL_TRIES.key(), delivery.field, tries.text())
    # Marked idle at once: not in flight any more, taken up again when its next try comes.
    client.xclaim(
        delivery.box, GROUP, CONSUMER, 0, [delivery.entry_id], idle=FAILED_IDLE_MS, justid=True
    )
    return 0
