"""The durable outbox: mail waits in the store until the mail server has taken it.

Whoever causes a message appends one small entry (`<kind>|<arg>|...`, field `m`) to an outbox
stream: account mail to `{mail}:queue`, booking mail to the room's own stream, appended by the
claim and cancel functions in the same atomic (and durable) call as the booking itself. Nothing
is rendered or sent during the request.

Every web process runs a sender (`strongroom.outbox_sender`; or `manage.py sendmail`), a
consumer of the streams' one consumer group: `XREADGROUP` hands each new entry to one sender,
which renders it in its reader's language (the renderer plugged in for its kind, `RENDERERS`),
sends it, and acknowledges that one entry (`XACK` + `XDEL`) as soon as the mail server accepted
it. No lease: while a sender works on what it was handed, a keep-alive thread touches those
entries every second (`XCLAIM ... JUSTID`); a sender that dies stops touching them, and after
RECOVER_MS another one takes them over (`XPENDING ... IDLE`, then `XCLAIM` with the same minimum
idle time, so only one wins). A crash re-sends at most what was in flight; a process that exits
(even at once, its parent gone) lets its sender finish the message under way and begin no other
(`strongroom.outbox_sender.sender_stop`, at exit). A pass of a sender is
`strongroom.outbox_delivery.outbox_send`.

A message that fails stays pending, marked idle at once, with its attempts and next try in
`{mail}:tries` (1, 2, 4 ... minutes apart, at most an hour); once the stream has delivered it
STRONGROOM_MAIL_TRIES times it moves to the dead letters (`{mail}:dead`), which staff retry or
discard on /staff/mail/. A renderer returning None (no verified address, booking gone) drops the
entry; a pass acknowledges the entries it dropped together at its end, after the writes their
renderers asked for (`write_with_ack`), in two round trips however many there are.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import socket
import threading
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass

import redis
from django.conf import settings
from django.core.mail import EmailMessage

from strongroom import keyspace as ks
from strongroom.ahead import Command, pipeline_send
from strongroom.calls import FunctionSpec
from strongroom.decoders import text_hash, text_values
from strongroom.libraries import fcall
from strongroom.plugins import Point

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
# Also run `hook(client)` every `outbox_sender.SENDER_PERIOD_S`, in one process at a time
# (e.g. the waiting-list sweep).
SENDER_HOOKS: Point[Callable[[redis.Redis], None]] = Point("sender hooks")

GROUP = "senders"
FIELD = "m"
BATCH = 200
FIRST_RETRY_MS = 60_000  # a failed message is tried again after 1, 2, 4 ... minutes
LAST_RETRY_MS = 3_600_000  # ... at most an hour apart
FULL_PASS_COUNT = 4  # new entries read from each outbox on a full pass (a long one is woken)
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


QUEUE_ONCE = FunctionSpec(
    "mail_queue_once", "QUEUE_ONCE", ("once", "queue"), ("member", "field", "keep_ms"),
    replies=("queued entry", "again", "invalid what"),
)  # fmt: skip
ONCE_KEEP_MS = 24 * 3600 * 1000


def mail_queue_once(
    client: redis.Redis, *, kind: str, args: tuple[object, ...], request_id: str
) -> bool:
    """Queue one account message for a form request (a client-made id) unless that request
    queued it already: one call checks and queues. False when it had."""
    keys, call_args = QUEUE_ONCE.call(
        keys={"once": ks.MAIL_ONCE.key(request=request_id), "queue": ks.MAIL_OUTBOX.key()},
        args={"member": entry(kind, *args), "field": FIELD, "keep_ms": ONCE_KEEP_MS},
    )
    answer = QUEUE_ONCE.answer_of(fcall(client, QUEUE_ONCE.name, keys, call_args))
    if answer["status"] not in ("queued", "again"):
        raise ValueError(f"{QUEUE_ONCE.name}: {answer}")
    if answer["status"] != "queued":
        return False
    sender_wake(ks.MAIL_OUTBOX.key())
    return True


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


DEAD_RETRY = FunctionSpec(
    "mail_dead_retry", "DEAD_RETRY", ("dead", "queue"), ("letter", "field"),
    replies=("queued entry", "gone", "invalid what"),
)  # fmt: skip
DEAD_DISCARD = FunctionSpec("mail_dead_discard", "DEAD_DISCARD", ("dead",), ("letter",))
SPECS = (DEAD_RETRY, DEAD_DISCARD, QUEUE_ONCE)


def dead_letter_retry(*, client: redis.Redis, key: str) -> bool:
    """Queue a dead letter again (in the site's outbox), as a new message with its tries
    counted anew, and forget it, in one call (strongroom/lua/mail.lua); False when it is no
    longer there (another staff member, or another press, handled it)."""
    keys, args = DEAD_RETRY.call(
        keys={"dead": ks.MAIL_DEAD.key(), "queue": ks.MAIL_OUTBOX.key()},
        args={"letter": key, "field": FIELD},
    )
    answer = DEAD_RETRY.answer_of(fcall(client, DEAD_RETRY.name, keys, args))
    if answer["status"] != "queued":
        return False
    sender_wake(ks.MAIL_OUTBOX.key())
    return True


def dead_letter_discard(*, client: redis.Redis, key: str) -> bool:
    """Forget a dead letter; False when it is no longer there."""
    keys, args = DEAD_DISCARD.call(keys={"dead": ks.MAIL_DEAD.key()}, args={"letter": key})
    return bool(fcall(client, DEAD_DISCARD.name, keys, args) == "discarded")


# --- writes made with an entry's acknowledgement ---------------------------------------------

# The writes asked for by the render under way in a sender's pass (None: not in a pass).
pass_writes: ContextVar[list[Command] | None] = ContextVar(
    "strongroom_outbox_pass_writes", default=None
)


def write_with_ack(client: redis.Redis, *commands: Command) -> None:
    """Writes a renderer makes for the entry it renders (a receipt owed, say). In a sender's
    pass they are made with the entry's acknowledgement and before it: for the entries a pass
    drops, all in one round trip at the pass's end. A pass that stops before leaves its
    entries pending, to be rendered again, so the writes must be idempotent. Outside a pass
    they are made at once."""
    pending = pass_writes.get()
    if pending is None:
        pipeline_send(client, commands)
    else:
        pending.extend(commands)


# --- waking this process's sender ------------------------------------------------------------

# Set to make this process's sender look now (`strongroom.outbox_sender.sender_loop` waits on it).
sender_event = threading.Event()
EVERY_BOX = ""  # in the woken set: look at every outbox
_woken: set[str] = set()  # the outboxes this process wrote to since its sender last looked
_woken_lock = threading.Lock()


def sender_wake(*boxes: str) -> None:
    """Ask this process's sender to look now (no store round trip): at `boxes`, the outboxes
    the caller wrote to, or at every outbox when none is named."""
    with _woken_lock:
        _woken.update(boxes or (EVERY_BOX,))
    sender_event.set()


def sender_woken() -> set[str]:
    """Take the outboxes woken since the last call (EVERY_BOX among them: look at all)."""
    with _woken_lock:
        woken = set(_woken)
        _woken.clear()
    return woken


def retry_at(attempts: int, at: int) -> int:
    """When a message that failed `attempts` times is tried again (after a failure at `at`)."""
    first = int(getattr(settings, "STRONGROOM_MAIL_FIRST_RETRY_MS", FIRST_RETRY_MS))
    return at + min(LAST_RETRY_MS, first * 2 ** max(0, attempts - 1))
