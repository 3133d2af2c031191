"""Checks a site runs on its store before it serves: an app registers one (in its
AppConfig.ready) and `serve`, like every web process, runs them all. A check that finds the
store unfit raises StoreNotReady with a message saying what to do (e.g. which command to run)."""

from __future__ import annotations

from collections.abc import Callable

import redis

_checks: list[Callable[[redis.Redis], None]] = []


class StoreNotReady(Exception):
    """The store cannot be served as it is; the message says what to run."""


def startup_check_register(check: Callable[[redis.Redis], None]) -> None:
    """Run `check(client)` before serving (idempotent)."""
    if check not in _checks:
        _checks.append(check)


def startup_checks(client: redis.Redis) -> None:
    """Run every registered check; the first that refuses raises StoreNotReady."""
    for check in _checks:
        check(client)
