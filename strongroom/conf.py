"""Strict parsing of environment variables for the settings module.

A malformed value stops start-up with a message naming the variable; a missing one
takes the documented default.
"""

from __future__ import annotations

import datetime as dt
import os
import unicodedata
import zoneinfo
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import parse_qs, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

T = TypeVar("T")

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _parse(name: str, default: T, parser: Callable[[str], T], expected: str) -> T:
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        return parser(raw.strip())
    except (ValueError, TypeError, zoneinfo.ZoneInfoNotFoundError) as exc:
        raise ImproperlyConfigured(f"{name}={raw!r} is not valid: expected {expected}.") from exc


def env_str(name: str, default: str) -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    def parse(raw: str) -> bool:
        if raw.lower() in _TRUE:
            return True
        if raw.lower() in _FALSE:
            return False
        raise ValueError(raw)

    return _parse(name, default, parse, "one of 1/0, true/false, yes/no, on/off")


def env_int(name: str, default: int, *, minimum: int, maximum: int) -> int:
    def parse(raw: str) -> int:
        value = int(raw)
        if not minimum <= value <= maximum:
            raise ValueError(raw)
        return value

    return _parse(name, default, parse, f"a whole number from {minimum} to {maximum}")


def env_date(name: str, default: dt.date | None) -> dt.date | None:
    return _parse(name, default, dt.date.fromisoformat, "a date as YYYY-MM-DD")


def env_list(name: str, default: list[str]) -> list[str]:
    def parse(raw: str) -> list[str]:
        return [item.strip() for item in raw.split(",") if item.strip()]

    return _parse(name, default, parse, "a comma-separated list")


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    def parse(raw: str) -> str:
        if raw not in choices:
            raise ValueError(raw)
        return raw

    return _parse(name, default, parse, "one of " + ", ".join(choices))


def env_timezone(name: str, default: str) -> str:
    def parse(raw: str) -> str:
        zoneinfo.ZoneInfo(raw)
        return raw

    return _parse(name, default, parse, "an IANA time zone such as Asia/Shanghai")


CLUSTER_SCHEMES = ("redis+cluster://", "rediss+cluster://")


@dataclass(frozen=True)
class ClusterURL:
    """A parsed `redis+cluster://[user:password@]host:port[,host:port...]` URL."""

    seeds: tuple[tuple[str, int], ...]
    username: str | None
    password: str | None
    tls: bool


def is_cluster_url(url: str | None) -> bool:
    return bool(url) and str(url).startswith(CLUSTER_SCHEMES)


def cluster_url_parse(raw: str) -> ClusterURL:
    """The seed nodes and credentials of a cluster URL; ValueError when malformed."""
    scheme, _, rest = raw.partition("://")
    if scheme not in ("redis+cluster", "rediss+cluster") or not rest:
        raise ValueError(raw)
    credentials, _, hosts = rest.rpartition("@")
    hosts = hosts.rstrip("/")
    if "/" in hosts or "?" in hosts or "#" in hosts:
        raise ValueError(raw)
    username: str | None = None
    password: str | None = None
    if credentials:
        user, colon, secret = credentials.partition(":")
        username = unquote(user) or None
        password = unquote(secret) if colon else None
    seeds = []
    for item in hosts.split(","):
        host, colon, port = item.strip().rpartition(":")
        host = host.removeprefix("[").removesuffix("]")
        if (
            not colon
            or not host
            or not (port.isascii() and port.isdigit())
            or not 0 < int(port) < 65536
        ):
            raise ValueError(item)
        seeds.append((host, int(port)))
    return ClusterURL(tuple(seeds), username, password, tls=scheme == "rediss+cluster")


def env_redis_url(name: str) -> str | None:
    def parse(raw: str) -> str | None:
        if not raw:
            return None
        if raw.startswith(CLUSTER_SCHEMES):
            cluster_url_parse(raw)
            return raw
        if not raw.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError(raw)
        return raw

    return _parse(
        name,
        None,
        parse,
        "a redis://, rediss:// or unix:// URL, or redis+cluster://[user:password@]host:port"
        "[,host:port...] (rediss+cluster:// for TLS)",
    )


def env_url(name: str, default: str) -> str:
    """An http:// or https:// base URL, without a trailing slash."""

    def parse(raw: str) -> str:
        parts = urlsplit(raw)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.query:
            raise ValueError(raw)
        return raw.rstrip("/")

    return _parse(name, default, parse, "an http:// or https:// URL")


DEFAULT_BIND = "127.0.0.1:8000"


def site_url_for_bind(bind: str) -> str:
    """The site's address for links in mail when STRONGROOM_SITE_URL is unset: where `make run`
    binds (BIND). A wildcard address (0.0.0.0, [::]) is not one a reader can open: localhost
    then; a unix socket: the default port's address."""
    if bind.startswith(("unix:", "fd://")) or ":" not in bind:
        bind = DEFAULT_BIND
    host, _, port = bind.rpartition(":")
    if host in ("0.0.0.0", "[::]", "::", ""):  # noqa: S104 (the bound address, read)
        host = "localhost"
    return f"http://{host}:{port}"


@dataclass(frozen=True)
class EmailServer:
    """Where mail goes, parsed from EMAIL_URL: an SMTP server (None: files under the data dir)."""

    host: str
    port: int
    username: str
    password: str
    use_ssl: bool
    use_tls: bool
    sender: str


def _sender(raw: str) -> str:
    """A From header value: `Name <address>` or an address, on one line, whose address a mail
    server takes (see strongroom.addresses.address_sendable)."""
    from email.policy import default

    from strongroom.addresses import address_sendable

    if any(ch in raw for ch in "\r\n\x00\u2028\u2029\x85"):
        raise ValueError(raw)
    try:
        header = default.header_factory("From", raw)
    except (IndexError, TypeError) as exc:  # the parser's own stumbles on e.g. "a@"
        raise ValueError(raw) from exc
    addresses: tuple[Any, ...] = tuple(getattr(header, "addresses", ()))
    if len(addresses) != 1 or header.defects:
        raise ValueError(raw)
    if not addresses[0].username or not address_sendable(addresses[0].addr_spec):
        raise ValueError(raw)
    return raw


_CONTROLS = ("Cc", "Cf", "Zl", "Zp")


def _host(name: str) -> str:
    """A host name or IP address (IDNA-encodable, no spaces)."""
    if not name or any(ch.isspace() or unicodedata.category(ch) in _CONTROLS for ch in name):
        raise ValueError(name)
    try:
        name.encode("idna")
    except UnicodeError as exc:
        raise ValueError(name) from exc
    return name


def env_email_from(name: str, default: str) -> str:
    """A From address (`Name <address>` or an address)."""
    return _parse(name, default, _sender, "an address, or Name <address>, on one line")


def _email_server(raw: str) -> EmailServer | None:
    if not raw:
        return None
    parts = urlsplit(raw)
    if parts.scheme not in ("smtp", "smtps") or not parts.hostname:
        raise ValueError(raw)
    _host(parts.hostname)
    port = parts.port  # raises ValueError when not a number or above 65535
    if port is not None and not 1 <= port <= 65535:
        raise ValueError(raw)
    if parts.path not in ("", "/") or parts.fragment:
        raise ValueError(raw)
    query = parse_qs(parts.query, keep_blank_values=True, strict_parsing=bool(parts.query))
    unknown = set(query) - {"starttls", "from"}
    if unknown or any(len(values) != 1 for values in query.values()):
        raise ValueError(raw)
    starttls = query.get("starttls", ["0"])[0].lower()
    if starttls not in _TRUE | _FALSE:
        raise ValueError(raw)
    smtps = parts.scheme == "smtps"
    return EmailServer(
        host=parts.hostname,
        port=port or (465 if smtps else 25),
        username=unquote(parts.username or ""),
        password=unquote(parts.password or ""),
        use_ssl=smtps,
        use_tls=not smtps and starttls in _TRUE,
        sender=_sender(sender) if (sender := query.get("from", [""])[0]) else "",
    )


def env_email_url(name: str) -> EmailServer | None:
    """`smtp://user:pass@host:587?starttls=1&from=a@b` or `smtps://...:465`; unset or empty:
    None (mail is written to files)."""
    return _parse(
        name,
        None,
        _email_server,
        "smtp://[user:password@]host[:port 1-65535][?starttls=1][&from=address on one line] or "
        "smtps://...",
    )
