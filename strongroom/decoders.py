"""Replies as text.

redis-py types replies as `bytes | str` since a client may or may not decode them. Every client
made by `strongroom.store` has decode_responses=True, so replies are text: these give them that
type (a cast, no work at run time).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import cast


def text(reply: bytes | str) -> str:
    """A decoded string reply."""
    return cast(str, reply)


def text_or_none(reply: bytes | str | None) -> str | None:
    """A decoded string reply that may be nil."""
    return cast("str | None", reply)


def text_hash(reply: Mapping[bytes | str, bytes | str]) -> dict[str, str]:
    """A decoded HGETALL (or field/value map) reply."""
    return cast("dict[str, str]", reply)


def text_list(reply: Sequence[object]) -> list[str]:
    """A decoded list reply (LRANGE, SMEMBERS as a list, ZRANGE without scores)."""
    return cast("list[str]", reply)


def text_values(reply: Sequence[bytes | str | None]) -> list[str | None]:
    """A decoded HMGET/MGET reply (None for a missing field or key)."""
    return cast("list[str | None]", reply)


def text_scored(reply: object) -> list[tuple[str, float]]:
    """A decoded ZRANGE ... WITHSCORES reply: (member, score) pairs."""
    return cast("list[tuple[str, float]]", reply)


def text_stream(reply: object) -> list[tuple[str, dict[str, str]]]:
    """A decoded XRANGE/XREVRANGE reply: (entry id, fields) pairs, never nil entries."""
    return cast("list[tuple[str, dict[str, str]]]", reply)
