"""Checks a site runs on its store before it serves: an app plugs one into `STARTUP_CHECKS`
(strongroom/plugins.py, from its AppConfig.ready) and `serve`, like every web process, runs
them all. A check that finds the store unfit raises StoreNotReady with a message saying what to
do (e.g. which command to run)."""

from __future__ import annotations

from collections.abc import Callable

import redis

from strongroom.plugins import Point

STARTUP_CHECKS: Point[Callable[[redis.Redis], None]] = Point("startup checks")


class StoreNotReady(Exception):
    """The store cannot be served as it is; the message says what to run."""


def startup_checks(client: redis.Redis) -> None:
    """Run every plugged check; the first that refuses raises StoreNotReady."""
    for check in STARTUP_CHECKS:
        check(client)
