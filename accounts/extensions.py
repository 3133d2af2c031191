"""What other apps add to a person's account without accounts importing them (dependencies run
one way): parts of the account page, and what to forget when a person deletes their account.
Apps register in their AppConfig.ready (booking: upcoming bookings; cancelling and anonymising
bookings on deletion)."""

from __future__ import annotations

from typing import Protocol

import redis


class AccountPart(Protocol):
    def __call__(self, *, client: redis.Redis, person_id: int) -> dict[str, object]: ...


class PersonForgetter(Protocol):
    def __call__(self, *, client: redis.Redis, person_id: int) -> None: ...


_parts: list[AccountPart] = []
_forgetters: list[PersonForgetter] = []


def account_part(function: AccountPart) -> AccountPart:
    """Register a function whose dict joins the account page's context."""
    _parts.append(function)
    return function


def person_forgetter(function: PersonForgetter) -> PersonForgetter:
    """Register a function run when a person deletes their account, before the person goes."""
    _forgetters.append(function)
    return function


def account_context(*, client: redis.Redis, person_id: int) -> dict[str, object]:
    """The registered parts of one person's account page."""
    context: dict[str, object] = {}
    for part in _parts:
        context.update(part(client=client, person_id=person_id))
    return context


def person_forget_everywhere(*, client: redis.Redis, person_id: int) -> None:
    """Run every registered forgetter (each is atomic per its own unit, e.g. per room)."""
    for forget in _forgetters:
        forget(client=client, person_id=person_id)
