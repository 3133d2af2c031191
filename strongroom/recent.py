"""Answers a worker computed and may give again: while they are young enough, or for as long
as the caller checks they still hold.

With an age (the building map): a fresh answer is computed when the kept one is older than
`max_age_ms`, so the store is read once per interval per worker whatever the traffic; what a
page shows from there must say, or not matter, that it may be that old; a booking is always
checked by its own function. With `one_renews`, only the first caller to find it too old
computes the next one; the others get the old answer meanwhile (for at most another
`max_age_ms`), instead of every thread of the worker computing the same answer at once.
Without one (the catalog's result pages): the caller keeps with each answer what it was
computed from and checks that before giving it again.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class Recent(Generic[V]):
    """Values by key with the moment each was computed; at most `size`, least recent out."""

    def __init__(self, *, size: int = 256, clock: Callable[[], float] = time.monotonic) -> None:
        self.size = size
        self.clock = clock
        self._values: OrderedDict[Hashable, tuple[float, V]] = OrderedDict()
        self._renewing: dict[Hashable, float] = {}  # key -> when its renewer began
        self._lock = threading.Lock()

    def get(
        self, key: Hashable, *, max_age_ms: int | None = None, one_renews: bool = False
    ) -> tuple[V, float] | None:
        """The value kept under `key` and its age in seconds, if it is younger than `max_age_ms`
        (None: whatever its age; 0: never). `one_renews`: an older one is still given while
        another caller renews it (see the module's doc); None tells this caller to renew it."""
        if max_age_ms is not None and max_age_ms <= 0:
            return None
        with self._lock:
            kept = self._values.get(key)
            if kept is None:
                return None
            now = self.clock()
            age = now - kept[0]
            if max_age_ms is not None and (age >= max_age_ms / 1000 or age < 0):
                began = self._renewing.get(key)
                if one_renews and began is not None and 0 <= now - began < max_age_ms / 1000:
                    return kept[1], age
                if one_renews:
                    self._renewing[key] = now
                else:
                    del self._values[key]
                return None
            self._values.move_to_end(key)
            return kept[1], age

    def put(self, key: Hashable, value: V) -> None:
        with self._lock:
            self._renewing.pop(key, None)
            self._values[key] = (self.clock(), value)
            self._values.move_to_end(key)
            while len(self._values) > self.size:
                self._renewing.pop(self._values.popitem(last=False)[0], None)

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
            self._renewing.clear()


class Flights:
    """One computation at a time per key within a worker: the first caller computes, the
    others wait for it (at most `wait_s`, then compute their own) and take what it left. When
    eight buyers race for a slot, the seven refused all need the room's new panel at once."""

    def __init__(self, *, wait_s: float = 1.0) -> None:
        self.wait_s = wait_s
        self._running: dict[Hashable, threading.Event] = {}
        self._lock = threading.Lock()

    def once(self, key: Hashable, look: Callable[[], V | None], compute: Callable[[], V]) -> V:
        """`look()` if it finds something, else `compute()`, run by one caller per `key` at a
        time (`compute` keeps what `look` finds afterwards)."""
        found = look()
        if found is not None:
            return found
        with self._lock:
            running = self._running.get(key)
            if running is None:
                mine = self._running[key] = threading.Event()
        if running is not None:
            running.wait(self.wait_s)
            found = look()
            return found if found is not None else compute()
        try:
            return compute()
        finally:
            with self._lock:
                del self._running[key]
            mine.set()
