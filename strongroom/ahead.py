"""Reads sent ahead with the request's identity: one round trip for both.

A signed-in request reads its session (and the person the session's key names) before anything
else. A view that knows from the request alone what it will read first says so with
`@reads_ahead(plan)`: `plan(request)` returns those commands, and `ReadAheadMiddleware` sends
them in the session's own pipeline, just before the view runs. When the view then reads, it asks
`pipeline_replies(client, commands)`, which gives the replies already read for exactly these
commands, or sends them (an anonymous request without a session, a plan that differed, a
session some middleware had read already). `read_together` does the same for reads a view
knows it will make one after the other (a refused booking's panel and its alternatives).

Only reads go ahead: the replies are what the store held a moment before the view ran, and
whatever depends on who is asking (their own holds, say) is worked out by the view afterwards,
from the identity the session settles.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

import redis
from django.http import HttpRequest, HttpResponse

# One command: its arguments and the options redis-py's execute_command takes (e.g. raw bytes).
Command = tuple[tuple[Any, ...], dict[str, Any]]
Plan = Callable[[HttpRequest], Sequence[Command]]
View = TypeVar("View", bound=Callable[..., HttpResponse])

# This request's reads made ahead: (commands, replies), each served once.
Read = tuple[tuple[Command, ...], list[Any]]
_read: ContextVar[list[Read] | None] = ContextVar("strongroom_read_ahead", default=None)


def reads_ahead(plan: Plan) -> Callable[[View], View]:
    """Mark a view whose first store reads `plan(request)` names (see the module's doc)."""

    def mark(view: View) -> View:
        view.reads_ahead = plan  # type: ignore[attr-defined]
        return view

    return mark


@contextmanager
def request_reads() -> Iterator[None]:
    """The span of one request's reads ahead (what is not asked for is dropped at its end).
    Outside one nothing is read ahead: no later request could be served from it."""
    token = _read.set([])
    try:
        yield
    finally:
        _read.reset(token)


def command(*args: Any, **options: Any) -> Command:
    return (args, options)


def pipeline_replies(client: redis.Redis, commands: Sequence[Command]) -> list[Any]:
    """The replies to `commands`: read ahead in this request when they were exactly these
    (once: a second read of the same keys goes to the store), else sent now in one pipeline."""
    wanted, ahead = tuple(commands), _read.get() or []
    for at, (asked, replies) in enumerate(ahead):
        if asked == wanted:
            del ahead[at]
            return replies
    return _send(client, list(commands))


def read_together(client: redis.Redis, *reads: Sequence[Command]) -> None:
    """Send several reads the view will make in one pipeline now (within a request: what is
    not asked for by the end of it is dropped); `pipeline_replies` then serves each."""
    wanted = [tuple(read) for read in reads if read]
    if wanted and _read.get() is not None:
        replies = _send(client, [c for read in wanted for c in read])
        _keep(list(zip(wanted, _split(replies, wanted), strict=True)))


def _send(client: redis.Redis, commands: list[Command]) -> list[Any]:
    pipe = client.pipeline(transaction=False)
    for args, options in commands:
        pipe.execute_command(*args, **options)
    return list(pipe.execute())


def _split(replies: list[Any], reads: Sequence[Sequence[Command]]) -> list[list[Any]]:
    parts, at = [], 0
    for read in reads:
        parts.append(replies[at : at + len(read)])
        at += len(read)
    return parts


def _keep(found: list[Read]) -> None:
    ahead = _read.get()
    if ahead is not None:
        ahead.extend(found)


class ReadAheadMiddleware:
    """Sends a view's planned reads with the session's read (last of the middleware, so only
    for a request that reaches its view)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        with request_reads():
            return self.get_response(request)

    def process_view(
        self, request: HttpRequest, view: Callable[..., Any], args: Any, kwargs: Any
    ) -> None:
        plan: Plan | None = getattr(view, "reads_ahead", None)
        session = getattr(request, "session", None)
        load_with = getattr(session, "load_with", None)
        if plan is None or load_with is None:
            return
        commands = tuple(plan(request))
        if commands:
            replies = load_with(commands)
            if replies is not None:
                _keep([(commands, replies)])
