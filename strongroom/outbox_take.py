"""Taking a mail sender's share of the outboxes (`strongroom.outbox`): the new entries of each,
and those due again (failed before, or left by a sender that stopped touching them); an
outbox's consumer group is made once it exists. Sent by `strongroom.outbox_delivery`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import redis

from strongroom import keyspace as ks
from strongroom.decoders import text_values
from strongroom.outbox import CONSUMER, FIELD, GROUP, Tries, tries_field

RECOVER_MS = 3_000  # an entry no sender touched for this long is taken over


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


# The outboxes this process has found with their consumer group: a pass reads them straight
# away. The others are first asked whether they exist (an outbox never written to has no key):
# reading a stream that is not there is an error (NOGROUP), and an idle site asking 300 rooms
# every few seconds made most of the server's commands errors.
_grouped: set[str] = set()


def outbox_grouped_forget() -> None:
    """Forget which outboxes have their group (the store was emptied: tests)."""
    _grouped.clear()


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
            _grouped.add(box)
        elif "requires the key to exist" not in str(reply):
            raise reply
    return made


def entries_take(
    client: redis.Redis, boxes: Sequence[str], at: int, count: int, *, again: bool = False
) -> tuple[list[Delivery], list[str]]:
    """What this sender is to send now from `boxes`: new entries (at most `count` from each),
    then entries due again (failed before, or left by a sender that stopped touching them).
    Also the outboxes that gave `count` new ones (more may wait)."""
    known = [box for box in boxes if box in _grouped]
    unknown = [box for box in boxes if box not in _grouped]
    pipe = client.pipeline(transaction=False)
    for box in known:
        pipe.xreadgroup(GROUP, CONSUMER, {box: ">"}, count=count)
        pipe.xpending_range(box, GROUP, "-", "+", count, idle=RECOVER_MS)
    for box in unknown:
        pipe.exists(box)
    replies = pipe.execute(raise_on_error=False)
    reads, found = replies[: 2 * len(known)], replies[2 * len(known) :]
    for reply in found:
        if isinstance(reply, Exception):
            raise reply
    # Known, yet its group is gone (the outbox was deleted since): made again if it is back.
    missing = [box for box, reply in zip(known, reads[0::2], strict=True) if _no_group(reply)]
    _grouped.difference_update(missing)
    missing += [box for box, exists in zip(unknown, found, strict=True) if exists]
    taken: list[Delivery] = []
    stale: list[tuple[str, str, int]] = []
    full: list[str] = []
    for box, read, pending in zip(known, reads[0::2], reads[1::2], strict=True):
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
        more, more_full = entries_take(client, made, at, count, again=True)
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
