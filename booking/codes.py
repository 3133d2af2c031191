"""Pickup codes: made, typed, shown, and kept as a keyed hash (to verify) and sealed (to show
the owner again); keys derive from SECRET_KEY."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from functools import cache

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings

CODE_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"  # no 0/O, 1/I/L look-alikes
CODE_LENGTH = 10


def code_new() -> str:
    """A fresh pickup code: CODE_LENGTH characters from CODE_ALPHABET, from `secrets`."""
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def code_normalise(text: str) -> str:
    """What a person typed, as a code: case, spaces and dashes ignored ('' if impossible)."""
    code = re.sub(r"[\s-]", "", text).upper()
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
    """The code encrypted for the owner to see again (Fernet, key derived from SECRET_KEY)."""
    return _fernet(settings.SECRET_KEY).encrypt(code.encode()).decode()


def code_unseal(sealed: str) -> str:
    try:
        return _fernet(settings.SECRET_KEY).decrypt(sealed.encode()).decode()
    except (InvalidToken, ValueError):
        return ""
