"""Short booking references for people to read out: `B-7K3Q-9MXD`.

Eight characters of the pickup-code alphabet (no 0/O, 1/I/L look-alikes), the value
`random * 1000 + room`, so a reference names its room (staff find it with one HGET of that
room's refs hash) without showing it. The claim function refuses a reference already used in
the room, so references are unique; 852 million per room make a clash rare (it is retried).
"""

from __future__ import annotations

import hashlib
import secrets

import redis

from booking.domain.codes import CODE_ALPHABET
from booking.domain.keys import RoomKeys
from booking.domain.rules import room_count
from strongroom.decoders import text_or_none

_BASE = len(CODE_ALPHABET)
_LENGTH = 8
_SPACE = _BASE**_LENGTH
_ROOMS = 1000
_INDEX = {char: i for i, char in enumerate(CODE_ALPHABET)}


def _encode(value: int) -> str:
    chars = []
    for _position in range(_LENGTH):
        value, digit = divmod(value, _BASE)
        chars.append(CODE_ALPHABET[digit])
    body = "".join(reversed(chars))
    return f"B-{body[:4]}-{body[4:]}"


def reference_new(*, room: int) -> str:
    """A random reference of `room`."""
    if not 1 <= room < _ROOMS:
        raise ValueError(room)
    return _encode(secrets.randbelow(_SPACE // _ROOMS) * _ROOMS + room)


def reference_parse(text: object) -> str | None:
    """The canonical reference typed in any case, with or without `B-` and dashes or spaces;
    None when it cannot be one."""
    if not isinstance(text, str) or len(text) > 40:
        return None
    body = "".join(ch for ch in text.upper() if ch not in " -")
    if len(body) == _LENGTH + 1 and body.startswith("B"):
        body = body[1:]
    if len(body) != _LENGTH or any(ch not in _INDEX for ch in body):
        return None
    return f"B-{body[:4]}-{body[4:]}"


def reference_room(reference: str) -> int | None:
    """The room a canonical reference names, or None."""
    value = 0
    for ch in reference[2:].replace("-", ""):
        value = value * _BASE + _INDEX[ch]
    room = value % _ROOMS
    return room or None


def reference_derived(booking_id: str, room: int) -> str:
    """The reference of a booking stored before references existed: derived from its id (shown,
    not searchable)."""
    digest = int.from_bytes(hashlib.sha256(booking_id.encode()).digest()[:8])
    return _encode((digest % (_SPACE // _ROOMS)) * _ROOMS + room)


def booking_id_by_reference(*, client: redis.Redis, reference: object) -> str | None:
    """The id of the booking with this reference (typed in any form), or None (one HGET)."""
    canonical = reference_parse(reference)
    room = reference_room(canonical) if canonical else None
    if canonical is None or room is None or room > room_count():
        return None
    return text_or_none(client.hget(RoomKeys(room).refs, canonical))
