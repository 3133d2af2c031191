"""Reads sent ahead with the request's identity: one round trip for both.

A signed-in request reads its session (and the person the session's key names) before anything
else. A view that knows from the request alone what it will read first says so with
`@reads_ahead(plan)`: `plan(request)` returns those commands, and `ReadAheadMiddleware` sends
them in the session's own pipeline, just before the view runs. When the view then reads, it asks
`pipeline_replies(client, commands)`, which gives the replies already read for exactly these
commands, or sends them (an anonymous request without a session, a plan that differed, a
session some middleware had read already).

Only reads go ahead: the replies are what the store held a moment before the view ran, and
whatever depends on who is asking (their own holds, say) is worked out by the view afterwards,
from the identity the session settles.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextvars import ContextVar
from typing import Any, TypeVar

import redis
from django.http import HttpRequest, HttpResponse

# One command: its arguments and the options redis-py's execute_command takes (e.g. raw bytes).
Command = tuple[tuple[Any, ...], dict[str, Any]]
Plan = Callable[[HttpRequest], Sequence[Command]]
View = TypeVar("View", bound=Callable[..., HttpResponse])

_read: ContextVar[tuple[tuple[Command, ...], list[Any]] | None] = ContextVar(
    "strongroom_read_ahead", default=None
)


def reads_ahead(plan: Plan) -> Callable[[View], View]:
    """Mark a view whose first store reads `plan(request)` names (see the module's doc)."""

    def mark(view: View) -> View:
        view.reads_ahead = plan  # type: ignore[attr-defined]
        return view

    return mark


def command(*args: Any, **options: Any) -> Command:
    return (args, options)


def pipeline_replies(client: redis.Redis, commands: Sequence[Command]) -> list[Any]:
    """The replies to `commands`: read ahead with this request's session when they were
    exactly these, else sent now in one pipeline."""
    ahead = _read.get()
    if ahead is not None and ahead[0] == tuple(commands):
        _read.set(None)  # read once: a second read of the same keys goes to the store
        return ahead[1]
    pipe = client.pipeline(transaction=False)
    for args, options in commands:
        pipe.execute_command(*args, **options)
    return list(pipe.execute())


class ReadAheadMiddleware:
    """Sends a view's planned reads with the session's read (last of the middleware, so only
    for a request that reaches its view)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        token = _read.set(None)
        try:
            return self.get_response(request)
        finally:
            _read.reset(token)

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
                _read.set((commands, replies))
