"""The answer gunicorn itself gives to a request it refuses before Django sees it (a request line
or header over its limits, a malformed request): the site's own short page, in both languages,
with the same security headers as every other page, instead of gunicorn's bare HTML."""

from __future__ import annotations

import html
import socket
from typing import Any

from gunicorn import util  # type: ignore[import-untyped]

PAGE = """<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{status} {reason} · Strongroom</title></head>
<body><main>
<h1>{status} {reason}</h1>
<p>This request could not be read: its address or headers are too long or malformed. \
Please go back to the <a href="/">home page</a> and try again from there.</p>
<p lang="zh-Hans">无法读取此请求：地址或请求头过长或格式有误。\
请返回<a href="/">首页</a>重新操作。</p>
</main></body></html>
"""


def edge_headers() -> list[tuple[str, str]]:
    """The security headers every page of the site carries (settings.py, strongroom/*.py)."""
    from strongroom.headers import PERMISSIONS_POLICY, PRIVATE
    from strongroom.middleware import CONTENT_SECURITY_POLICY

    return [
        ("Content-Security-Policy", CONTENT_SECURITY_POLICY),
        ("X-Frame-Options", "DENY"),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "same-origin"),
        ("Permissions-Policy", PERMISSIONS_POLICY),
        ("Cache-Control", PRIVATE),
    ]


def edge_error_bytes(status: int, reason: str) -> bytes:
    """The whole HTTP answer: status line, headers, the page. gunicorn's message (which may
    quote the refused request) is not shown."""
    body = PAGE.format(status=status, reason=html.escape(reason)).encode()
    head = [
        f"HTTP/1.1 {status} {reason}",
        "Connection: close",
        "Content-Type: text/html; charset=utf-8",
        f"Content-Length: {len(body)}",
        *(f"{name}: {value}" for name, value in edge_headers()),
    ]
    return "\r\n".join(head).encode("latin-1") + b"\r\n\r\n" + body


def write_edge_error(sock: socket.socket, status_int: int, reason: str, mesg: Any) -> None:
    """Stands in for gunicorn.util.write_error (same arguments)."""
    util.write_nonblock(sock, edge_error_bytes(status_int, reason))


def install() -> None:
    """gunicorn writes its refusals through util.write_error, which has no setting of its own:
    the site's page is put in its place once, in the master, before the workers fork."""
    util.write_error = write_edge_error
