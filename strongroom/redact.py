"""Secrets kept out of the logs: the calendar subscription's secret and the reset and
verification tokens are part of their links' paths, which the access log (gunicorn) and
Django's request log ("Not Found: /book/calendar/...") would otherwise write down; anyone who
reads the log could then follow the link. Also the one expected refusal kept out of Django's
request log: a lost race for a slot (409)."""

from __future__ import annotations

import logging
import re
from typing import Any

from django.http.multipartparser import MultiPartParserError
from gunicorn.glogging import Logger  # type: ignore[import-untyped]

REDACTED = "[redacted]"
_SECRETS = (
    re.compile(r"(/book/calendar/)[^/?#\s\"]+(\.ics)"),
    re.compile(r"(/accounts/verify/)[^/?#\s\"]+()"),
    re.compile(r"(/accounts/password/reset/[^/?#\s\"]*/)[^/?#\s\"]+()"),
)


def redact(text: str) -> str:
    """`text` with every secret a link path carries replaced by [redacted]."""
    for pattern in _SECRETS:
        text = pattern.sub(rf"\g<1>{REDACTED}\g<2>", text)
    return text


def _redacted(value: object) -> object:
    return redact(value) if isinstance(value, str) else value


class RedactingFilter(logging.Filter):
    """On the site's log handler: a record's message and arguments, redacted."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(_redacted(arg) for arg in record.args)
        elif isinstance(record.args, dict):
            record.args = {key: _redacted(value) for key, value in record.args.items()}
        return True


class ExpectedAnswersFilter(logging.Filter):
    """On Django's request log: leaves out its warning for a 409. That is the answer to a buyer
    whose slot another took a moment before (7 of 8 answers when 8 race for one): the page
    says so, and each line cost the worker 65-90 us. Every other 4xx is still written. Two
    answers keep their one line without Django's traceback: a body that cannot be parsed (a
    multipart form without a boundary, or with a broken one: anyone can send one, and its 400
    says so), and the 503 page of a store outage raised in a middleware (each request of an
    outage wrote two chained tracebacks: 4.8 MB of log in 45 s; the line names the error)."""

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        error = record.exc_info[1] if record.exc_info else None
        if status == 400 and isinstance(error, MultiPartParserError):
            record.exc_info, record.exc_text = None, None
        elif status == 503 and error is not None:
            from strongroom.middleware import is_store_failure  # Django is set up by now

            if is_store_failure(error):
                record.msg = f"{record.msg} (%s)"
                record.args = (*(record.args or ()), type(error).__name__)
                record.exc_info, record.exc_text = None, None
        return status != 409


class AccessLogger(Logger):
    """gunicorn's logger, whose access log lines (request line, path, referer, headers) are
    redacted."""

    def atoms(self, resp: Any, req: Any, environ: Any, request_time: Any) -> dict[str, Any]:
        atoms = super().atoms(resp, req, environ, request_time)
        return {key: _redacted(value) for key, value in atoms.items()}
