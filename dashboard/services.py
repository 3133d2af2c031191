"""Writes of the staff dashboard: staff actions and their audit trail.

Actions on rooms (cancel, flush) are audited by the booking engine inside its functions; the
dashboard adds one entry per staff action to the staff audit (strongroom.audit).
"""

from __future__ import annotations

from dataclasses import dataclass

import redis

from accounts.people import Person
from accounts.selectors import person_get
from accounts.services import PersonNotFound, StaffChange, account_delete, staff_set
from booking.services import FlushResult, inventory_flush
from dashboard.season import season_name
from strongroom.audit import staff_audit_record

DETAIL_LIMIT = 500
# The staff actions this app writes to the staff audit (strongroom.audit).
AUDIT_KINDS = ("staff_grant", "staff_revoke", "season_flush", "person_delete")


class SelfRevokeRefused(Exception):
    """A staff member may not revoke their own staff rights (nobody could give them back)."""


class DeleteRefused(Exception):
    """Staff may not delete themselves, nor another staff member (revoke their rights first)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why  # "self" | "staff"


class WrongSeasonName(Exception):
    """The typed confirmation is not the season's name."""


def staff_grant_set(
    *, client: redis.Redis, actor: Person, person_id: int, is_staff: bool
) -> StaffChange:
    """Grant or revoke staff for a person and audit it when it changed anything (granting to
    staff, or revoking from someone who is not, writes nothing); raises accounts'
    PersonNotFound for an unknown id and SelfRevokeRefused when staff would lock themselves
    out."""
    if not is_staff and person_id == actor.id:
        raise SelfRevokeRefused
    change = staff_set(client=client, person_id=person_id, is_staff=is_staff)
    if change.changed:  # said by the call that wrote it: two presses at once are audited once
        staff_audit_record(
            client=client,
            kind="staff_grant" if is_staff else "staff_revoke",
            actor_id=str(actor.id),
            subject=str(person_id),
            detail=change.person.username,
        )
    return change


def person_delete_check(*, actor: Person, person: Person) -> None:
    """Raise DeleteRefused when `actor` may not delete `person` (themselves, or staff)."""
    if person.id == actor.id:
        raise DeleteRefused("self")
    if person.is_staff:
        raise DeleteRefused("staff")


def person_delete_by_staff(*, client: redis.Redis, actor: Person, person_id: int) -> Person:
    """Delete a person's account as their own deletion does (accounts' account_delete: their
    upcoming bookings cancelled, each with its mail, then the account forgotten) and audit it,
    naming the staff member and the person's id only. Raises PersonNotFound and DeleteRefused."""
    person = person_get(client=client, person_id=person_id)
    if person is None:
        raise PersonNotFound(person_id)
    person_delete_check(actor=actor, person=person)
    if not account_delete(client=client, person_id=person_id, staff_id=actor.id):
        raise PersonNotFound(person_id)  # gone in between (deleted by themselves)
    # Only the id: the page promises that the person's name is forgotten.
    staff_audit_record(
        client=client, kind="person_delete", actor_id=str(actor.id), subject=str(person_id)
    )
    return person


@dataclass(frozen=True)
class SeasonFlush:
    """What a season flush did."""

    season: str
    keys_removed: int
    bookings_cancelled: int


def season_flush(
    *, client: redis.Redis, actor: Person, confirmation: str, reason: str
) -> SeasonFlush:
    """Flush the season's inventory after the season's name was typed: remove exactly the
    registered inventory keys and cancel the confirmed bookings with the reason (the booking
    engine's inventory_flush, room by room), and audit it. Raises WrongSeasonName."""
    name = season_name()
    if not isinstance(confirmation, str) or confirmation.strip() != name:
        raise WrongSeasonName
    reason = " ".join(str(reason).split())[:DETAIL_LIMIT]
    # Buyers read the reason on their bookings in their own language: it is kept as staff
    # typed it (the staff audit's season_flush entry says which flush cancelled them).
    result: FlushResult = inventory_flush(client=client, actor_id=str(actor.id), reason=reason)
    staff_audit_record(
        client=client,
        kind="season_flush",
        actor_id=str(actor.id),
        subject=name,
        detail=f"{reason} ({result.keys_removed} keys, {result.bookings_cancelled} bookings)",
    )
    return SeasonFlush(name, result.keys_removed, result.bookings_cancelled)
