"""The building map's live refresh sends only what changed.

The page polls with a token of what it shows: three bytes per room (a digest of what the room's
tile shows, its number left out, so that the many equal tiles of a map give equal bytes and the
token costs little on the wire) and three for the open class C box grid. The answer names the
rooms whose bytes differ now: htmx swaps each of their tiles in place, with the counts, the grid
if it changed and the new token; nothing changed is an empty 204; a token that is not one of
this map's (another range of rooms, a damaged URL) gets the whole results.

The digest is of the room's state as read (booking.slots.building_map.RoomState), so it follows
the passing of time too (a hold that expired changes it without any write). A change is missed
only if two states share a digest: one chance in 16 million per changed room and refresh. A
per-room edition kept by the store could stand in for the digest of the rooms that were written
(`room_fingerprint` is the one place to change), holds' expiry still bounding it.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from booking.slots.building_map import BoxRow, BuildingMap, RoomState
from booking.web.find_query import MapQuery
from booking.web.pieces import pieces

FINGERPRINT_BYTES = 3


def _digest(shown: Hashable) -> bytes:
    return hashlib.blake2b(repr(shown).encode(), digest_size=FINGERPRINT_BYTES).digest()


@functools.lru_cache(maxsize=4096)  # most rooms of a map show the same thing
def _shown_digest(shown: Hashable) -> bytes:
    return _digest(shown)


def room_fingerprint(state: RoomState) -> bytes:
    """Bytes that change whenever what the room's tile shows changes (not its number)."""
    return _shown_digest(
        (
            state.state,
            state.free,
            state.total,
            state.held,
            state.held_until,
            state.first_box,
            state.free_hours,
            state.free_days,
            state.closed,
        )
    )


def grid_fingerprint(grid: tuple[BoxRow, ...]) -> bytes:
    return _digest(grid) if grid else bytes(FINGERPRINT_BYTES)


def map_token(bmap: BuildingMap) -> str:
    """What the map shows, as the refresh sends it back (URL-safe, no padding)."""
    shown = grid_fingerprint(bmap.grid) + b"".join(room_fingerprint(s) for s in bmap.rooms)
    return base64.urlsafe_b64encode(shown).decode().rstrip("=")


@dataclass(frozen=True)
class MapChanges:
    rooms: tuple[int, ...]  # indexes into bmap.rooms of the tiles that changed
    grid: bool
    most_rooms: bool  # more than half of them

    def __bool__(self) -> bool:
        return bool(self.rooms or self.grid)


def map_changes(token: str, bmap: BuildingMap) -> MapChanges | None:
    """What changed since the page got `token`, or None if the token is not this map's."""
    size = FINGERPRINT_BYTES * (len(bmap.rooms) + 1)
    if len(token) != -(-size * 4 // 3):  # base64 without padding: the only length it can have
        return None
    try:
        seen = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except (binascii.Error, ValueError):
        return None
    if len(seen) != size:
        return None
    width = FINGERPRINT_BYTES
    changed = tuple(
        index
        for index, state in enumerate(bmap.rooms)
        if seen[width * (index + 1) : width * (index + 2)] != room_fingerprint(state)
    )
    most = len(changed) > len(bmap.rooms) // 2
    return MapChanges(changed, seen[:width] != grid_fingerprint(bmap.grid), most)


def map_refresh(
    *, query: MapQuery, bmap: BuildingMap | None, context: dict[str, Any], seen: str
) -> tuple[str, dict[str, Any]] | None:
    """The refresh's template and context for a page that shows `seen`, or None (nothing
    changed: an empty 204)."""
    changes = map_changes(seen, bmap) if bmap is not None else None
    # "Only free rooms" adds and removes tiles: any change there sends every result, as does
    # a change of most rooms (one swap instead of hundreds).
    if changes is None or (changes and query.only_free) or changes.most_rooms:
        return "booking/_map_refresh.html", context
    if not changes:
        return None
    tiles = context["tiles"]
    changed = pieces("booking/_map_room_changed.html", "tile", (tiles[i] for i in changes.rooms))
    return "booking/_map_changes.html", context | {
        "changed_tiles": changed,
        "grid_changed": changes.grid,
    }
