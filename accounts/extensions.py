"""What other apps add to a person's account without accounts importing them (dependencies run
one way): parts of the account page, and what to forget when a person deletes their account.
Apps register in their AppConfig.ready (booking: upcoming bookings; cancelling and anonymising
bookings on deletion)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import redis

from strongroom.ahead import Command


class AccountPart(Protocol):
    def __call__(self, *, client: redis.Redis, person_id: int) -> dict[str, object]: ...


class AccountPartReads(Protocol):
    def __call__(self, *, client: redis.Redis, person_id: int) -> list[Command]: ...


class PersonForgetter(Protocol):
    def __call__(self, *, client: redis.Redis, person_id: int) -> None: ...


class IdentityRead(Protocol):
    def __call__(self, *, person_id: int) -> Command: ...


_parts: list[tuple[AccountPart, AccountPartReads]] = []
_identity_reads: dict[str, IdentityRead] = {}
_forgetters: list[PersonForgetter] = []


def account_part(*, reads: AccountPartReads) -> Callable[[AccountPart], AccountPart]:
    """Register a function whose dict joins the account page's context. `reads(client=,
    person_id=)` names the store reads it starts with: the page sends every part's first reads
    in one round trip (strongroom/ahead.py)."""

    def register(function: AccountPart) -> AccountPart:
        _parts.append((function, reads))
        return function

    return register


def account_parts_reads(*, client: redis.Redis, person_id: int) -> list[Command]:
    """The first reads of every registered part of one person's account page."""
    return [cmd for _part, reads in _parts for cmd in reads(client=client, person_id=person_id)]


def identity_read(name: str) -> Callable[[IdentityRead], IdentityRead]:
    """Register one read of a key in the person's own slot that rides with the session's read
    of the person (no round trip of its own); its reply is `identity_replies(request)[name]`."""

    def register(function: IdentityRead) -> IdentityRead:
        _identity_reads[name] = function
        return function

    return register


def identity_reads(*, person_id: int) -> list[tuple[str, Command]]:
    """The registered reads along the identity, by name."""
    return [(name, read(person_id=person_id)) for name, read in _identity_reads.items()]


def person_forgetter(function: PersonForgetter) -> PersonForgetter:
    """Register a function run when a person deletes their account, before the person goes."""
    _forgetters.append(function)
    return function


def account_context(*, client: redis.Redis, person_id: int) -> dict[str, object]:
    """The registered parts of one person's account page."""
    context: dict[str, object] = {}
    for part, _reads in _parts:
        context.update(part(client=client, person_id=person_id))
    return context


def person_forget_everywhere(*, client: redis.Redis, person_id: int) -> None:
    """Run every registered forgetter (each is atomic per its own unit, e.g. per room)."""
    for forget in _forgetters:
        forget(client=client, person_id=person_id)
