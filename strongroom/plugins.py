"""What the apps add to each other, the one plug-in mechanism: a lower module declares a `Point`
and reads what is plugged into it; a higher app plugs in from its `AppConfig.ready()`, by a call
(never by importing a module for its side effects, nor with a signal). Dependencies still run one
way: the module that owns the point never imports the apps that plug into it.

The points: `strongroom.audit.KINDS` (audit kinds and the stream that keeps each),
`strongroom.outbox.RENDERERS` and `SENDER_HOOKS` (mail kinds, work done on each sender pass),
`strongroom.keeper.KEEPER_TASKS` and `FAILOVER_REPAIRS` (the keeper's passes, repairs after a
failover), `accounts.extensions.ACCOUNT_PARTS`, `PERSON_FORGETTERS`, `SIGNED_OUT` and
`IDENTITY_READS` (the account page's parts, forgetting a person, signing out, reads that ride
with the identity)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class Point(Generic[T]):
    """One place apps plug into: `plug(item...)` in a ready(), iterate to read. With `key`, each
    key is plugged once (another item under a key already taken is an error); plugging the same
    item again changes nothing."""

    def __init__(self, name: str, *, key: Callable[[T], str] | None = None) -> None:
        self.name = name
        self._key = key
        self._items: list[T] = []

    def plug(self, *items: T) -> None:
        for item in items:
            if item in self._items:
                continue
            if self._key is not None and (taken := self.get(self._key(item))) is not None:
                raise ValueError(f"{self.name}: {self._key(item)!r} is taken by {taken!r}")
            self._items.append(item)

    def get(self, key: str) -> T | None:
        """The item plugged under `key` (a point with a key only)."""
        assert self._key is not None, f"{self.name} has no key"
        return next((item for item in self._items if self._key(item) == key), None)

    def __iter__(self) -> Iterator[T]:
        return iter(list(self._items))
