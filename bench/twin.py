"""In-memory twins of the site's pages, the benchmark's second floor (`/bench/twin/<path>`).

A twin request is the page's own request: the same gunicorn worker, Django stack, middleware,
view and template serve it; only the store's answers come from memory. The first twin request
for a page (per worker, and per cookie, headers and query) is served against the store while
every answer the store gives is kept on a tape, in order; later requests take each answer from
the tape instead of sending the command. Page / twin is then the share of a page's time that is
not spent on the store: its round trips, the server's own work and redis-py's packing and
parsing, the middleware's included (the session and person read, for one).

A command is answered by the tape's next entry for the same command (entries this request does
not need are skipped: a probe sent once per process, a read that a per-worker cache saves now);
one the rest of the tape does not have (that cache was warm when the tape was made and is cold
now) goes to the store, and its answer replaces the rest of the tape. Each twin answer says in
`X-Bench-Twin-Store-Calls` how many commands it sent; once a tape is made, that is 0
(tests/store/test_bench_twin.py).

A twin of a POST keeps the answers of its first request (with `X-Bench-Prefer`, of the first
whose status is that one: 409 for buyers who lose a race, asked again under a new booking id
until refused), then replays them whatever the form: the view still reads and checks the form
as the page does, but every claim is answered as that one was.

The store's client is patched in this module (`Redis.execute_command`, `Pipeline.execute`),
for the thread serving a twin request only; the application is wrapped by bench/wsgi.py, which
only `make bench` serves. Background threads (visit flushes, mail) use the store as always.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qsl, urlencode

import redis
from redis.client import Pipeline

from booking.domain.rules import booking_new_id

PREFIX = "/bench/twin"
STORE_CALLS_HEADER = "X-Bench-Twin-Store-Calls"

Entry = tuple[str, Any, bool]  # the command's signature, its answer, whether it was an error
Tape = list[Entry]

# What identifies a twin's tape: the request's method, path, query and the headers that change
# what the page answers (a refusal is taped apart from a win on the same form).
_KEYED = ("REQUEST_METHOD", "PATH_INFO", "QUERY_STRING", "HTTP_COOKIE", "HTTP_HX_REQUEST",
          "HTTP_HX_TARGET", "HTTP_ACCEPT_LANGUAGE", "HTTP_X_BENCH_PREFER")  # fmt: skip
_tapes: dict[tuple[str, ...], Tape] = {}
_serving = threading.local()


class Replay:
    """One twin request's walk along its tape (a copy of it: other threads walk the same one)."""

    def __init__(self, tape: Tape) -> None:
        self.tape = list(tape)
        self.at = 0
        self.store_calls = 0

    def answer(self, signature: str, send: Callable[[], Any]) -> Any:
        """The tape's next answer for this command (skipping what this request does not send:
        a probe made once per process, a read that a warm cache saves); else the store's,
        taped in place of the rest."""
        found = next(
            (at for at in range(self.at, len(self.tape)) if self.tape[at][0] == signature), None
        )
        if found is not None:
            self.at = found
            _, result, failed = self.tape[found]
        else:
            self.store_calls += 1
            try:
                result, failed = send(), False
            except redis.ResponseError as exc:  # the store's answer, an error reply
                result, failed = exc, True
            del self.tape[self.at :]
            self.tape.append((signature, result, failed))
        self.at += 1
        if failed:
            raise result
        return result


def _signature(args: Iterable[Any]) -> str:
    """A command's name, and the function's for FCALL: what a page sends in the same order on
    every request (keys and arguments change with the clock, the form and fresh ids)."""
    words = [str(arg) for arg, _ in zip(args, range(2), strict=False)]
    name = words[0].upper() if words else ""
    return f"{name} {words[1]}" if name in ("FCALL", "FCALL_RO") and len(words) > 1 else name


_store_command = redis.Redis.execute_command
_store_pipeline = Pipeline.execute


def _execute_command(self: redis.Redis, *args: Any, **options: Any) -> Any:
    replay: Replay | None = getattr(_serving, "replay", None)
    if replay is None:
        return _store_command(self, *args, **options)
    return replay.answer(_signature(args), lambda: _store_command(self, *args, **options))


def _pipeline_execute(self: Pipeline, raise_on_error: bool = True) -> list[Any]:
    replay: Replay | None = getattr(_serving, "replay", None)
    if replay is None:
        return _store_pipeline(self, raise_on_error)
    signature = " | ".join(_signature(args) for args, _ in self.command_stack)
    try:
        return list(replay.answer(signature, lambda: _store_pipeline(self, raise_on_error)))
    finally:
        self.reset()  # a replayed pipeline forgets its commands as a sent one does


redis.Redis.execute_command = _execute_command  # type: ignore[method-assign]
Pipeline.execute = _pipeline_execute  # type: ignore[method-assign]


def twin_wsgi(app: Callable[..., Iterable[bytes]]) -> Callable[..., Iterable[bytes]]:
    """`app`, answering `/bench/twin/<path>` as `/<path>` with the store's answers replayed."""

    def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        path = environ.get("PATH_INFO", "")
        if not path.startswith(PREFIX + "/"):
            return app(environ, start_response)
        environ["PATH_INFO"] = path[len(PREFIX) :]
        key = tuple(environ.get(name, "") for name in _KEYED)
        prefer = environ.get("HTTP_X_BENCH_PREFER", "")
        form = _form(environ) if prefer else b""
        for attempt in range(3 if prefer and key not in _tapes else 1):
            if prefer:
                # The same id again would be recognised as the first claim's retry: a new id
                # asks for the same slot as another buyer would, and is refused.
                body = _fresh_id(form) if attempt else form
                environ["wsgi.input"], environ["CONTENT_LENGTH"] = io.BytesIO(body), str(len(body))
            replay = Replay(_tapes.get(key, []))
            status, headers, answer = _serve(app, environ, replay)
            if not (replay.store_calls and prefer) or status.startswith(prefer):
                break
            _close(answer)
        if replay.store_calls and (not prefer or status.startswith(prefer)):
            _tapes[key] = replay.tape
        start_response(status, [*headers, (STORE_CALLS_HEADER, str(replay.store_calls))])
        return answer

    return application


def _serve(
    app: Callable[..., Iterable[bytes]], environ: dict[str, Any], replay: Replay
) -> tuple[str, list[tuple[str, str]], Iterable[bytes]]:
    """The application's answer to `environ`, the store's answers taken from `replay`."""
    started: list[Any] = []

    def start_response(status: str, headers: list[tuple[str, str]], *exc_info: Any) -> Any:
        started[:] = [status, headers]
        return lambda data: None

    _serving.replay = replay
    try:
        answer = app(environ, start_response)
    finally:
        _serving.replay = None
    return started[0], started[1], answer


def _form(environ: dict[str, Any]) -> bytes:
    length = int(environ.get("CONTENT_LENGTH") or 0)
    return bytes(environ["wsgi.input"].read(length)) if length else b""


def _fresh_id(form: bytes) -> bytes:
    fields = parse_qsl(form.decode(), keep_blank_values=True)
    fresh = [
        (name, booking_new_id(room=int(value.split("-", 1)[0])) if name == "booking_id" else value)
        for name, value in fields
    ]
    return urlencode(fresh).encode()


def _close(answer: Iterable[bytes]) -> None:
    close = getattr(answer, "close", None)
    if close is not None:
        close()
