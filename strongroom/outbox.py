"""The durable outbox: mail waits in the store until it is sent.

Whoever causes a message writes one small entry (`<kind>|<arg>|...`) into an outbox sorted set,
scored by when it is due: account mail into `{mail}:outbox`, booking mail into the room's own
outbox, written by the claim and cancel functions in the same atomic (and durable) call as the
booking itself. Nothing is rendered or sent during the request.

`outbox_send` (a background thread in every web process, one process at a time under a lease;
or `manage.py sendmail`) reads the outboxes in one pipeline, renders each due entry in its
reader's language with the renderer plugged in for its kind (`RENDERERS`), sends them through
Django's email framework, and removes an entry only once it is sent. A message that fails is kept
and retried after 1, 2, 4 ... minutes (at most an hour apart); staff see the queue with attempts
and the last error. A renderer returning None (no verified address, booking gone) drops the entry.

The sender reads every outbox (301 of them) every few seconds, and between those passes only the
outboxes its own process wrote to (`sender_wake(box)`): a booking's receipt goes out within a
fraction of a second without a scan of the whole building per burst of bookings. What another
process wrote while this one held the lease waits for that process's next try or for the next
full pass, a few seconds at most.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import redis
from django.conf import settings
from django.core.mail import EmailMessage, get_connection
from django.core.mail.backends.base import BaseEmailBackend
from redis.client import Pipeline

from strongroom import keyspace as ks
from strongroom.ahead import request_reads
from strongroom.clock import now_ms
from strongroom.plugins import Point
from strongroom.store import text_values

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
# Also run `hook(client)` on every full pass of the sender (e.g. the waiting-list sweep).
SENDER_HOOKS: Point[Callable[[redis.Redis], None]] = Point("sender hooks")

BATCH = 200
LEASE_MS = 120_000
FIRST_RETRY_MS = 60_000
LAST_RETRY_MS = 3_600_000
SENDER_PERIOD_S = 5.0
SENDER_GAP_S = 0.2  # at least this long between two passes of a process's sender, bar backlogs
_ERROR_LIMIT = 300


def entry(kind: str, *args: object) -> str:
    """An outbox member: kind and arguments joined by `|` (arguments never contain it)."""
    parts = [kind, *(str(a) for a in args)]
    if any("|" in part for part in parts):
        raise ValueError("an outbox argument contains |")
    return "|".join(parts)


def mail_queue(
    client: redis.Redis | redis.client.Pipeline, *, kind: str, args: tuple[object, ...]
) -> None:
    """Queue one account message (`{mail}:outbox`); the caller may pass a pipeline."""
    client.zadd(ks.MAIL_OUTBOX.key(), {entry(kind, *args): now_ms()}, nx=True)
    sender_wake(ks.MAIL_OUTBOX.key())


def mailboxes() -> list[str]:
    """Every outbox: the accounts' one, then each room's."""
    rooms = [
        ks.BOOKING_OUTBOX.key(room=f"{n:03d}") for n in range(1, settings.STRONGROOM_ROOM_COUNT + 1)
    ]
    return [ks.MAIL_OUTBOX.key(), *rooms]


@dataclass(frozen=True)
class Pending:
    """One queued message as staff see it."""

    mailbox: str
    member: str
    due_ms: int
    attempts: int = 0
    last_error: str = ""
    first_failure_ms: int = 0

    @property
    def kind(self) -> str:
        return self.member.split("|", 1)[0]

    @property
    def tries_field(self) -> str:
        return f"{self.mailbox} {self.member}"


def _tries(value: str | None) -> tuple[int, int, str]:
    if not value:
        return 0, 0, ""
    attempts, first, error = ([*value.split("|", 2), "", ""])[:3]
    return int(attempts or 0), int(first or 0), error


def outbox_pending(
    *,
    client: redis.Redis,
    due_before_ms: float | None = None,
    limit: int = BATCH,
    boxes: Sequence[str] | None = None,
) -> list[Pending]:
    """Queued messages (due ones only when `due_before_ms` is given), oldest due first, at most
    `limit`, taken from the outboxes (`boxes`, or all 301) as `_quotas` shares them out. Two
    round trips (how many are due in each outbox and its oldest, in one pipeline; then the
    attempts of what was found), three when an outbox's share is more than its oldest. A pass
    under a backlog reads about `limit` entries, not `limit` from every outbox."""
    top: float | str = "+inf" if due_before_ms is None else due_before_ms
    boxes = mailboxes() if boxes is None else list(boxes)
    if not boxes:
        return []
    pipe = client.pipeline(transaction=False)
    for box in boxes:
        pipe.zcount(box, "-inf", top)
        pipe.zrangebyscore(box, "-inf", top, start=0, num=1, withscores=True)
    replies = pipe.execute()
    counts = [int(count) for count in replies[0::2]]
    heads = replies[1::2]
    quotas = _quotas(counts, [head[0][1] if head else 0.0 for head in heads], limit)
    more = [(box, quota) for box, quota in zip(boxes, quotas, strict=True) if quota > 1]
    if more:
        pipe = client.pipeline(transaction=False)
        for box, quota in more:
            pipe.zrangebyscore(box, "-inf", top, start=0, num=quota, withscores=True)
        shares = dict(zip((box for box, _ in more), pipe.execute(), strict=True))
    else:
        shares = {}
    found = [
        Pending(box, member, int(score))
        for box, quota, head in zip(boxes, quotas, heads, strict=True)
        if quota
        for member, score in shares.get(box, head)
    ]
    found.sort(key=lambda p: p.due_ms)
    if not found:
        return []
    tries = text_values(client.hmget(ks.MAIL_TRIES.key(), [p.tries_field for p in found]))
    out = []
    for pending, value in zip(found, tries, strict=True):
        attempts, first, error = _tries(value)
        out.append(Pending(pending.mailbox, pending.member, pending.due_ms, attempts, error, first))
    return out


def _quotas(counts: list[int], heads: list[float], limit: int) -> list[int]:
    """How many entries to take from each outbox (`counts` due in each, the oldest due at
    `heads`), `limit` in all: every outbox with mail due gets a share in turn, the one whose
    oldest entry is oldest first, and what a short outbox leaves goes to the longer ones. A
    room with a long backlog cannot starve the others, nor wait behind them."""
    quotas = [0] * len(counts)
    waiting = sorted((at for at, count in enumerate(counts) if count), key=lambda at: heads[at])
    left = limit
    while left and waiting:
        share = max(1, left // len(waiting))
        for at in waiting:
            give = min(share, counts[at] - quotas[at], left)
            quotas[at] += give
            left -= give
            if not left:
                break
        waiting = [at for at in waiting if quotas[at] < counts[at]]
    return quotas


@dataclass(frozen=True)
class SendReport:
    sent: int = 0
    failed: int = 0
    dropped: int = 0

    @property
    def handled(self) -> int:
        """Messages this pass took up (sent, failed or dropped)."""
        return self.sent + self.failed + self.dropped


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


def _retry_at(attempts: int, at: int) -> int:
    return at + min(LAST_RETRY_MS, FIRST_RETRY_MS * 2 ** max(0, attempts - 1))


def outbox_send(
    *, client: redis.Redis, at_ms: int | None = None, boxes: Sequence[str] | None = None
) -> SendReport:
    """Send every due message (up to BATCH) of `boxes` (default: every outbox); keep and
    reschedule the ones that fail."""
    at = now_ms() if at_ms is None else at_ms
    due = outbox_pending(client=client, due_before_ms=at, boxes=boxes)
    if not due:
        return SendReport()
    connection = get_connection(fail_silently=False)
    done = client.pipeline(transaction=False)
    # A slow mail server must not outlive the lease (another process would send the same
    # messages): stop at half of it; what is left stays due for the next pass.
    stop_at = time.monotonic() + LEASE_MS / 2000
    try:
        with request_reads():
            _prepare(client, [pending.member for pending in due])
            sent, failed, dropped = _send_due(client, due, at, connection, done, stop_at)
    finally:
        done.execute()
        with contextlib.suppress(Exception):  # a broken connection is already reported
            connection.close()
    return SendReport(sent, failed, dropped)


def _send_due(
    client: redis.Redis,
    due: list[Pending],
    at: int,
    connection: BaseEmailBackend,
    done: Pipeline,
    stop_at: float,
) -> tuple[int, int, int]:
    """Render and send `due` in order (until `stop_at`); queue in `done` what each outcome
    changes in the store. Returns (sent, failed, dropped)."""
    sent = failed = dropped = 0
    for pending in due:
        if time.monotonic() > stop_at:
            break
        try:
            message = _render(client, pending.member)
            if message is not None:
                message.connection = connection
                message.send()
        except Exception as exc:
            failed += 1
            attempts, first = pending.attempts + 1, pending.first_failure_ms
            detail = f"{type(exc).__name__}: {exc}"[:_ERROR_LIMIT].replace("\n", " ")
            logger.warning("mail %s not sent (attempt %d): %s", pending.member, attempts, detail)
            done.zadd(pending.mailbox, {pending.member: _retry_at(attempts, at)}, xx=True)
            done.hset(
                ks.MAIL_TRIES.key(), pending.tries_field, f"{attempts}|{first or at}|{detail}"
            )
            continue
        if message is None:
            dropped += 1
        else:
            sent += 1
        done.zrem(pending.mailbox, pending.member)
        if pending.attempts:
            done.hdel(ks.MAIL_TRIES.key(), pending.tries_field)
    return sent, failed, dropped


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


def sender_pass(*, client: redis.Redis, boxes: Sequence[str] | None = None) -> SendReport | None:
    """One pass under the lease: None when another process holds it. A full pass (no `boxes`)
    runs the hooks first, then sends from every outbox; else only from `boxes`."""
    token = secrets.token_hex(8)
    if not client.set(ks.MAIL_LEASE.key(), token, nx=True, px=LEASE_MS):
        return None
    try:
        if boxes is None:
            for hook in SENDER_HOOKS:
                hook(client)
        return outbox_send(client=client, boxes=boxes)
    finally:
        if client.get(ks.MAIL_LEASE.key()) == token:
            client.delete(ks.MAIL_LEASE.key())


def sender_pause(report: SendReport | None) -> float:
    """How long the sender rests after a pass (`report`; None: another process held the
    lease): not at all after a full batch, as more may be due (the next batch at once, not in a
    few seconds); else SENDER_GAP_S, so that wakes within it share the next pass (a burst of
    bookings costs a few reads of the outboxes it wrote to a second, not one per booking)."""
    return 0.0 if report is not None and report.handled >= BATCH else SENDER_GAP_S


def sender_boxes(woken: set[str], *, full_due: bool) -> list[str] | None:
    """The outboxes a pass reads: None (all of them) when a full pass is due or was asked for,
    else the woken ones."""
    return None if full_due or EVERY_BOX in woken else sorted(woken)


def _sender_loop() -> None:
    from strongroom.store import UNAVAILABLE, StoreUnavailable, get_store

    last_full = float("-inf")  # the first pass reads every outbox
    while True:
        _wake.wait(SENDER_PERIOD_S)
        _wake.clear()
        woken = sender_woken()
        boxes = sender_boxes(woken, full_due=time.monotonic() - last_full >= SENDER_PERIOD_S)
        if boxes == []:
            continue
        report, failed = None, False
        try:
            report = sender_pass(client=get_store(), boxes=boxes)
        except (*UNAVAILABLE, StoreUnavailable) as exc:  # store down or stalled: one line, no trace
            failed = True
            logger.warning("the mail sender's pass found no store (%s); next in a few seconds", exc)
        except Exception:
            failed = True
            logger.warning("the mail sender's pass failed; next in a few seconds", exc_info=True)
        if report is not None and boxes is None:
            last_full = time.monotonic()
        if not failed and (report is None or report.handled >= BATCH):
            # The lease is elsewhere, or more may be due: look again after the pause. (A failed
            # pass waits for the next full one, a few seconds away, not a retry every pause.)
            sender_wake(*(woken if boxes is not None else ()))
        pause = sender_pause(report)
        if pause:
            time.sleep(pause)
        else:
            _wake.set()


def sender_start() -> None:
    """Start this process's sender thread once (STRONGROOM_MAIL_SENDER)."""
    global _thread
    with _thread_lock:
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_sender_loop, name="mail-sender", daemon=True)
            _thread.start()
