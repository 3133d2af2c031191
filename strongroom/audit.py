"""The staff audit, shared by every app: one stream (keyspace family staff-audit) of staff
actions, and the registry of audit kinds.

Each app plugs the kinds it writes into `KINDS` in its AppConfig.ready() (strongroom/plugins.py):
kinds written here with `staff_audit_record` (catalog's book edits, dashboard's staff grants), and
kinds an app writes into streams of its own (booking's rooms, inside its Redis Functions). Readers
(the dashboard) ask `audit_kinds` which kinds exist and where each is kept."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import redis
from django.conf import settings
from redis.typing import EncodableT, FieldT

from strongroom.clock import from_ms, to_ms
from strongroom.keyspace import STAFF_AUDIT
from strongroom.plugins import Point
from strongroom.store import text, text_stream

DETAIL_LIMIT = 500
STAFF = "staff"  # the stream of this module


@dataclass(frozen=True)
class AuditKind:
    """A kind of audit entry and the stream that keeps it (STAFF: this module's)."""

    kind: str
    stream: str = STAFF


KINDS: Point[AuditKind] = Point("audit kinds", key=lambda k: k.kind)


def audit_kinds_of(kinds: tuple[str, ...], stream: str = STAFF) -> list[AuditKind]:
    """The AuditKinds to plug for `kinds` kept in `stream`."""
    return [AuditKind(kind, stream) for kind in kinds]


def audit_kinds(stream: str | None = None) -> tuple[str, ...]:
    """Every plugged kind (of one stream if given): kinds kept by the apps' own streams first,
    then the staff stream's, each in the order plugged."""
    found = [k for k in KINDS if stream is None or k.stream == stream]
    return tuple(k.kind for k in sorted(found, key=lambda k: k.stream == STAFF))


@dataclass(frozen=True)
class StaffEntry:
    """One staff action as stored."""

    at: dt.datetime
    kind: str
    actor: str
    subject: str
    detail: str


def staff_audit_record(
    *,
    client: redis.Redis,
    kind: str,
    actor_id: str,
    subject: str = "",
    detail: str = "",
    now: dt.datetime | None = None,
) -> str:
    """Append one staff action to the staff audit stream; returns the entry id."""
    plugged = KINDS.get(kind)
    if plugged is None or plugged.stream != STAFF:
        raise ValueError(f"no staff action {kind!r}")
    at = to_ms(now or dt.datetime.now(tz=dt.UTC))
    fields: dict[FieldT, EncodableT] = {
        "kind": kind,
        "actor": str(actor_id),
        "subject": str(subject)[:DETAIL_LIMIT],
        "detail": " ".join(str(detail).split())[:DETAIL_LIMIT],
        "at": at,
    }
    return text(
        client.xadd(
            STAFF_AUDIT.key(), fields, maxlen=settings.STRONGROOM_AUDIT_MAXLEN, approximate=True
        )
    )


def staff_audit_entries(
    *, client: redis.Redis, count: int = 50, kind: str | None = None
) -> list[StaffEntry]:
    """The newest `count` staff actions, of one kind if given (one XREVRANGE).

    With a kind the whole stream is read (it is capped at STRONGROOM_AUDIT_MAXLEN entries): the
    newest `count` entries may hold none of that kind while older ones do.
    """
    entries = []
    stream = text_stream(client.xrevrange(STAFF_AUDIT.key(), count=None if kind else count))
    for _entry_id, fields in stream:
        if kind is not None and fields.get("kind") != kind:
            continue
        entries.append(
            StaffEntry(
                at=from_ms(fields.get("at")) or dt.datetime.fromtimestamp(0, tz=dt.UTC),
                kind=fields.get("kind", ""),
                actor=fields.get("actor", ""),
                subject=fields.get("subject", ""),
                detail=fields.get("detail", ""),
            )
        )
    return entries[:count]
