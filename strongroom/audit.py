"""The staff audit, shared by every app: one stream (keyspace family staff-audit) of staff
actions, and the registry of audit kinds.

Each app registers the kinds it writes in its AppConfig.ready(): kinds written here with
`staff_audit_record` (catalog's book edits, dashboard's staff grants), and kinds an app writes
into streams of its own (booking's rooms, inside its Redis Functions). Readers (the dashboard)
ask `audit_kinds` which kinds exist and where each is kept."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import redis
from django.conf import settings
from redis.typing import EncodableT, FieldT

from strongroom.clock import from_ms, to_ms
from strongroom.keyspace import STAFF_AUDIT
from strongroom.store import text, text_stream

DETAIL_LIMIT = 500
STAFF = "staff"  # the stream of this module
_KINDS: dict[str, str] = {}  # kind -> the app whose stream keeps it ("staff": this one)


def audit_kinds_register(*, kinds: tuple[str, ...], stream: str = STAFF) -> None:
    """Declare audit kinds and the stream that keeps them (idempotent)."""
    for kind in kinds:
        if _KINDS.setdefault(kind, stream) != stream:
            raise ValueError(f"audit kind {kind!r} is already kept in {_KINDS[kind]!r}")


def audit_kinds(stream: str | None = None) -> tuple[str, ...]:
    """Every registered kind (of one stream if given): kinds kept by the apps' own streams
    first, then the staff stream's, each in registration order."""
    found = [k for k, s in _KINDS.items() if stream is None or s == stream]
    return tuple(sorted(found, key=lambda k: _KINDS[k] == STAFF))


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
    if _KINDS.get(kind) != STAFF:
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
