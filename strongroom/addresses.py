"""What makes an email address sendable (no Django here: the settings module uses it)."""

from __future__ import annotations

import unicodedata
from urllib.parse import quote, unquote


def address_sendable(address: str) -> bool:
    """Whether a mail server can be handed this address: one @, no control or line-separator
    character anywhere (U+2028 splits a header line as CR/LF does), and a domain that encodes
    to IDNA (as Django's SMTP backend encodes it; an address that cannot would fail every try)."""
    if any(unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") for ch in address):
        return False
    local, at, domain = address.rpartition("@")
    if not at or not local or not domain:
        return False
    try:
        encoded = domain.encode("idna").decode("ascii")
    except UnicodeError:
        return False
    return all(0 < len(label) <= 63 for label in encoded.split("."))


def address_one_form(address: str) -> str:
    """A sendable address (`address_sendable`) in one form for every way of writing it: lower
    case, and its domain in Unicode (`u@xn--exmple-cua.com` is `u@exämple.com`), so that one
    mailbox is one entry of the address index however it was typed."""
    local, _, domain = address.lower().rpartition("@")
    return f"{local}@{domain.encode('idna').decode('idna')}"


def address_arg(address: str) -> str:
    """An address as an outbox argument (percent-encoded: it may hold a "|")."""
    return quote(address, safe="@.+-_")


def address_from_arg(arg: str) -> str:
    return unquote(arg)
