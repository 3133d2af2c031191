"""Reads sent ahead with the request's identity: one round trip for both.

A signed-in request reads its session (and the person the session's key names) before anything
else. A view that knows from the request alone what it will read first says so with
`@reads_ahead(plan)`: `plan(request)` returns those commands, and `ReadAheadMiddleware` sends
them in the session's own pipeline, just before the view runs. When the view then reads, it asks
`pipeline_replies(client, commands)`, which gives each command the reply already read for that
very command, and sends the others in one pipeline (all of them for an anonymous request without
a session, a plan that differed, a session some middleware had read already). `read_together`
sends at once reads a view knows it will make one after the other (a refused booking's panel
and its alternatives; the account page's parts).

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
# A plan follows from what the request claims (its query, the person its session key names),
# before anything is checked: a longer one is not sent ahead, so that no forged key makes a
# request read much (the view reads what it needs itself; e.g. a cluster's account page).
PLAN_MOST = 32
View = TypeVar("View", bound=Callable[..., HttpResponse])

# This request's replies read ahead, by command (its arguments and options), each served once.
_Key = tuple[tuple[Any, ...], tuple[tuple[str, Any], ...]]
_read: ContextVar[dict[_Key, list[Any]] | None] = ContextVar("strongroom_read_ahead", default=None)


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
    token = _read.set({})
    try:
        yield
    finally:
        _read.reset(token)


def command(*args: Any, **options: Any) -> Command:
    return (args, options)


def _key(cmd: Command) -> _Key:
    args, options = cmd
    return args, tuple(sorted(options.items()))


def pipeline_replies(client: redis.Redis, commands: Sequence[Command]) -> list[Any]:
    """The replies to `commands`: each one read ahead in this request for that very command
    (once: asked again, it goes to the store), the others sent now in one pipeline."""
    kept = _read.get() or {}
    replies: list[Any] = [None] * len(commands)
    missing = []
    for at, cmd in enumerate(commands):
        found = kept.get(_key(cmd))
        if found:
            replies[at] = found.pop(0)
        else:
            missing.append(at)
    if missing:
        sent = pipeline_send(client, [commands[at] for at in missing])
        for at, reply in zip(missing, sent, strict=True):
            replies[at] = reply
    return replies


def read_together(client: redis.Redis, *reads: Sequence[Command]) -> None:
    """Send now, in one pipeline, the reads the view will make one after the other, except the
    commands already read ahead (within a request: what is not asked for by its end is
    dropped); `pipeline_replies` then serves each."""
    kept = _read.get()
    if kept is None:
        return
    wanted = [cmd for read in reads for cmd in read if not kept.get(_key(cmd))]
    if wanted:
        keep_replies(wanted, pipeline_send(client, wanted))


def pipeline_send(client: redis.Redis, commands: Sequence[Command]) -> list[Any]:
    """`commands` in one pipeline (not a transaction: on a cluster they may span slots); none,
    no round trip."""
    pipe = client.pipeline(transaction=False)
    for args, options in commands:
        pipe.execute_command(*args, **options)
    return list(pipe.execute())


def keep_replies(commands: Sequence[Command], replies: Sequence[Any]) -> None:
    """Keep replies just read (by `pipeline_replies`, say) for this request's later reads of
    the same commands: a caller that needed them first need not read them twice."""
    kept = _read.get()
    if kept is not None:
        for cmd, reply in zip(commands, replies, strict=True):
            kept.setdefault(_key(cmd), []).append(reply)


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
        if 0 < len(commands) <= PLAN_MOST:
            replies = load_with(commands)
            if replies is not None:
                keep_replies(commands, replies)
