"""The mail tests' helpers: mail written to files, a person with a confirmed address, and a
real SMTP server (aiosmtpd) on a free loopback port."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller

from accounts import emails, services
from strongroom import keyspace


@contextlib.contextmanager
def smtp_serving(handler: Any) -> Iterator[int]:
    """Serve `handler` (an aiosmtpd handler) on a free loopback port, yielded; stopped after."""
    with socket.socket() as probe:  # a free port (the controller checks it can connect)
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    controller = Controller(handler, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield port
    finally:
        controller.stop()


def mail_part(message: Any, content_type: str) -> bytes:
    """The decoded payload of a message's first part of `content_type` (text/html, ...)."""
    part = next(p for p in message.walk() if p.get_content_type() == content_type)
    payload = part.get_payload(decode=True)
    assert isinstance(payload, bytes), content_type
    return payload


def mail_to_smtp(settings: Any, port: int) -> None:
    """Send the site's mail through the SMTP server on loopback `port`, plainly (no TLS, no
    login), as the tests' aiosmtpd servers take it."""
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", port
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    settings.EMAIL_HOST_USER = settings.EMAIL_HOST_PASSWORD = ""


def mail_to_files(settings: Any, directory: Path) -> Path:
    """Send the site's mail as files under `directory` (one .eml a message); returns it."""
    settings.STRONGROOM_MAIL_DIR = directory
    settings.EMAIL_BACKEND = "strongroom.mail.FilePerMessageBackend"
    return directory


def with_address(client: Any, someone: Any, address: str, language: str = "en") -> None:
    """Give a person a verified address and a language, the way the site does it."""
    services.language_set(client=client, person_id=someone.id, language=language)
    emails.email_set(client=client, person_id=someone.id, email=address)
    token = emails.verify_token_make(person_id=someone.id, email=address)
    assert emails.email_verify(client=client, token=token) is not None
    client.delete(keyspace.MAIL_OUTBOX.key())  # the verification mail is not what tests read
