"""Pickup codes: made, typed, shown, and kept as a keyed hash (to verify); the owner's code is
derived again from the booking id when shown (records from before kept it sealed); keys derive
from SECRET_KEY."""

from __future__ import annotations

import base64
import hashlib
import hmac
import unicodedata
from functools import cache

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings

CODE_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"  # no 0/O, 1/I/L look-alikes
CODE_LENGTH = 10


def code_for(booking_id: str, number: int) -> str:
    """The pickup code of a booking: a keyed hash (HMAC-SHA256, key from SECRET_KEY) of its id
    and a small number (the claim tries 0, 1, ... on the rare clash with a live code of the
    room), written in CODE_ALPHABET. Nothing is encrypted per claim, and the store keeps no
    copy of the code: without SECRET_KEY the id tells nothing about it."""
    key = _derived_key("strongroom.booking.code-of-id")
    digest = hmac.new(key, f"{booking_id}|{number}".encode(), hashlib.sha256).digest()
    value = int.from_bytes(digest, "big")  # 256 bits: the bias mod 31^10 is below 2^-200
    chars = []
    for _ in range(CODE_LENGTH):
        value, digit = divmod(value, len(CODE_ALPHABET))
        chars.append(CODE_ALPHABET[digit])
    return "".join(chars)


def code_normalise(text: str) -> str:
    """What a person typed, as a code: case, spaces and dashes of any kind ignored, full-width
    letters and digits (a Chinese keyboard's) read as plain ones ('' if impossible)."""
    folded = unicodedata.normalize("NFKC", text)
    code = "".join(c for c in folded if not c.isspace() and unicodedata.category(c) != "Pd").upper()
    if len(code) != CODE_LENGTH or any(c not in CODE_ALPHABET for c in code):
        return ""
    return code


def code_display(code: str) -> str:
    """ABCDE-FGHJK: easier to read out and type."""
    return f"{code[:5]}-{code[5:]}" if code else ""


def _derived_key(purpose: str) -> bytes:
    return hmac.new(settings.SECRET_KEY.encode(), purpose.encode(), hashlib.sha256).digest()


def code_mac(room: int, code: str) -> str:
    """The keyed hash stored to verify a code (HMAC-SHA256 with a key from SECRET_KEY)."""
    key = _derived_key("strongroom.booking.code-mac")
    return hmac.new(key, f"{room}|{code}".encode(), hashlib.sha256).hexdigest()


@cache
def _fernet(secret: str) -> Fernet:
    key = hmac.new(secret.encode(), b"strongroom.booking.code-seal", hashlib.sha256).digest()
    return Fernet(base64.urlsafe_b64encode(key))


def code_seal(code: str) -> str:
    """The code encrypted as records made before `code_for` kept it (Fernet, key derived from
    SECRET_KEY); new records keep no copy of the code."""
    return _fernet(settings.SECRET_KEY).encrypt(code.encode()).decode()


def code_unseal(sealed: str) -> str:
    try:
        return _fernet(settings.SECRET_KEY).decrypt(sealed.encode()).decode()
    except (InvalidToken, ValueError):
        return ""
