"""What other apps add to a person's account without accounts importing them (dependencies run
one way): parts of the account page, what to forget when a person deletes their account, and
what to do when a person signs out. Apps plug into these points in their AppConfig.ready
(strongroom/plugins.py; booking: upcoming bookings, cancelling and anonymising bookings on
deletion, giving the buyer's hold back at sign-out, the priority holds read with the identity)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import redis

from strongroom.ahead import Command
from strongroom.plugins import Point


class AccountPartRender(Protocol):
    def __call__(self, *, client: redis.Redis, person_id: int) -> dict[str, object]: ...


class AccountPartReads(Protocol):
    def __call__(self, *, client: redis.Redis, person_id: int) -> list[Command]: ...


class PersonForgetter(Protocol):
    def __call__(self, *, client: redis.Redis, person_id: int, actor_id: str = "") -> None: ...


class SignOutHook(Protocol):
    def __call__(self, *, person_id: str) -> None: ...


class IdentityReadPlan(Protocol):
    def __call__(self, *, person_id: int) -> Command: ...


@dataclass(frozen=True)
class AccountPart:
    """A part of the account page: `render` gives its context; `reads` names the store reads
    it starts with (the page sends every part's first reads in one round trip,
    strongroom/ahead.py)."""

    render: AccountPartRender
    reads: AccountPartReads


@dataclass(frozen=True)
class IdentityRead:
    """One read of a key in the person's own slot that rides with the session's read of the
    person (no round trip of its own); its reply is `accounts.access.identity_replies(...)`
    under `name`."""

    name: str
    plan: IdentityReadPlan


ACCOUNT_PARTS: Point[AccountPart] = Point("account parts")
# Read with the session and the person record on every signed-in request.
IDENTITY_READS: Point[IdentityRead] = Point("identity reads", key=lambda read: read.name)
# Run when a person's account is deleted, before the person goes (actor_id: the staff member
# who deleted it; empty when the person did).
PERSON_FORGETTERS: Point[PersonForgetter] = Point("person forgetters")
# Run when a person signs out, before the session goes.
SIGNED_OUT: Point[SignOutHook] = Point("sign-out hooks")
# Run once a person's address is confirmed: `hook(client=..., person_id=...)`.
EMAIL_VERIFIED: Point[Callable[..., None]] = Point("address confirmed hooks")


def account_parts_reads(*, client: redis.Redis, person_id: int) -> list[Command]:
    """The first reads of every plugged part of one person's account page."""
    return [cmd for part in ACCOUNT_PARTS for cmd in part.reads(client=client, person_id=person_id)]


def identity_reads(*, person_id: int) -> list[tuple[str, Command]]:
    """The plugged reads along the identity, by name."""
    return [(read.name, read.plan(person_id=person_id)) for read in IDENTITY_READS]


def account_context(*, client: redis.Redis, person_id: int) -> dict[str, object]:
    """The plugged parts of one person's account page."""
    context: dict[str, object] = {}
    for part in ACCOUNT_PARTS:
        context.update(part.render(client=client, person_id=person_id))
    return context


def person_forget_everywhere(*, client: redis.Redis, person_id: int, actor_id: str = "") -> None:
    """Run every plugged forgetter (each is atomic per its own unit, e.g. per room)."""
    for forget in PERSON_FORGETTERS:
        forget(client=client, person_id=person_id, actor_id=actor_id)


def signed_out(*, person_id: str) -> None:
    """Run every plugged sign-out hook."""
    for hook in SIGNED_OUT:
        hook(person_id=person_id)
