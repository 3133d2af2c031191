"""Kept pieces: what a worker built and rendered from one room (the booking panel's state, the
calendar's HTML) is kept with the room's edition and reused while it is exact, instead of being
built again on every request (booking/README.md, "Kept pieces").

A piece is the same for everyone who asks with the same key (the page's choices, the language,
today and the sales window) as long as the room has not changed: every function that writes a
key of the room sets its edition anew in the same call, and the edition is read first in the one
round trip that reads the room. The only change without a write is time: a hold ends, so a piece
lives until the earliest end of the holds it was built with. A buyer with a hold of their own in
what is read sees it as free, so for them nothing is kept or reused. A room never written has no
edition: nothing is kept for it (rooms with data from before editions included)."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from django.conf import settings

from booking.slots.room_read import RoomDays
from strongroom.recent import Flights, Recent

V = TypeVar("V")

# Per worker and kind of piece; a piece is 10 to 60 KB (a class C panel with its 100 box cells
# and its pickers rendered), so a kind holds at most about 15 MB.
KEPT_MOST = 256


class Kept(Generic[V]):
    """Pieces of one kind by key, each with the edition, the moment and the hold end it was
    built with."""

    def __init__(self, *, size: int = KEPT_MOST) -> None:
        self._recent: Recent[tuple[str, int, int | None, V]] = Recent(size=size)
        self._building = Flights()
        self.enabled = True  # off: every piece is built afresh (the tests' fresh render)
        _EVERY.append(self.clear)

    @property
    def active(self) -> bool:
        """Whether pieces are kept at all: not with keeping off (the tests' fresh render), nor
        with DEBUG on (templates may change: rendered each time, as pieces are)."""
        return self.enabled and not settings.DEBUG

    def get_or_build(
        self,
        key: Hashable,
        read: RoomDays | None,
        owner_id: str | None,
        now_ms: int,
        build: Callable[[], V],
    ) -> V:
        """The piece kept under `key` if it is still exact for this read of the room, else
        `build()` (kept when it may be given to others)."""
        keepable = (
            self.active
            and read is not None
            and read.edition != ""
            and (owner_id is None or owner_id not in read.holders)
        )
        if not keepable or read is None:
            return build()
        room = read  # not None here, for the closures below

        def kept() -> V | None:
            found = self._recent.get(key)
            if found is not None:
                edition, built_ms, until_ms, value = found[0]
                # A hold that had ended when the piece was built has ended now too: the clock
                # only goes forward here (a reader behind it gets a piece of its own).
                current = built_ms <= now_ms and (until_ms is None or now_ms < until_ms)
                if edition == room.edition and current:
                    return value
            return None

        def built() -> V:
            value = build()
            self._recent.put(key, (room.edition, now_ms, room.until_ms, value))
            return value

        # Requests that read the same new edition at once wait for one build.
        return self._building.once((key, read.edition), kept, built)

    def clear(self) -> None:
        self._recent.clear()


_EVERY: list[Callable[[], None]] = []  # the clear() of every Kept


def kept_clear() -> None:
    """Forget every kept piece of this worker (a test's store is emptied between tests)."""
    for clear in _EVERY:
        clear()
