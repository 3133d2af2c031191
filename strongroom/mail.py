"""Django's email framework, one file per message when no SMTP server is configured."""

from __future__ import annotations

import datetime as dt
import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.mail.backends.base import BaseEmailBackend
from django.core.mail.message import EmailMessage


class FilePerMessageBackend(BaseEmailBackend):
    """Writes each message to its own `.eml` file under STRONGROOM_MAIL_DIR (var/mail/), named
    by time so a directory listing reads in sending order; a newcomer can open them."""

    def __init__(self, *, fail_silently: bool = False, **kwargs: Any) -> None:
        super().__init__(fail_silently=fail_silently)
        self.directory = Path(kwargs.get("file_path") or settings.STRONGROOM_MAIL_DIR)

    def send_messages(self, email_messages: Sequence[EmailMessage]) -> int:
        self.directory.mkdir(parents=True, exist_ok=True)
        sent = 0
        for message in email_messages:
            stamp = dt.datetime.now(tz=dt.UTC).strftime("%Y%m%dT%H%M%S.%f")
            path = self.directory / f"{stamp}-{secrets.token_hex(4)}.eml"
            # Written under a temporary name, then renamed: a reader never sees half a message.
            partial = path.with_suffix(".part")
            partial.write_bytes(message.message().as_bytes())
            partial.rename(path)
            sent += 1
        return sent
