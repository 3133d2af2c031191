"""Call specs for the apps' Redis Functions: the names of a function's KEYS and ARGV in order,
and of the fields of its reply. The Lua declares the same lists (`<LUA>_KEYS`, `<LUA>_ARGS`) and
reads its call by name; each app's tests read the Lua and check that both sides agree, so the
order of a call exists once per side.

A spec builds a call from named values, `SPEC.call(keys={...}, args={...})`, refuses a missing
or unknown name, and names the fields of a reply: `SPEC.reply_of(reply)` for a reply of fixed
fields, `SPEC.answer_of(reply)` for one that starts with a status word (`replies`: each status
word with the names of the fields after it). The Lua declares those too (`<LUA>_REPLIES`,
`<LUA>_REPLY`, and `<LUA>_KEY_TAILS`: the groups of keys a call may add after its named ones)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FunctionSpec:
    """One function's KEYS and ARGV by name, in order (`lua`: the prefix of its tables in the
    Lua). A function that takes a variable number of keys or arguments (tag sets, ids) takes
    them after these (`more_*`, or `tails`: groups of keys named by `key_tails`, in that order).
    `reply`: the names of a list reply's fields, in order. `replies`: "status field field" for
    each status word the function answers with ("*name": every field from there on)."""

    name: str
    lua: str
    keys: tuple[str, ...]
    args: tuple[str, ...]
    reply: tuple[str, ...] = ()
    replies: tuple[str, ...] = ()
    key_tails: tuple[str, ...] = ()

    def call(
        self,
        *,
        keys: Mapping[str, str],
        args: Mapping[str, object],
        more_keys: Sequence[str] = (),
        more_args: Sequence[object] = (),
        tails: Mapping[str, Sequence[str]] | None = None,
    ) -> tuple[list[str], list[object]]:
        """KEYS and ARGV of a call, in the function's order."""
        if set(keys) != set(self.keys) or set(args) != set(self.args):
            wrong = set(keys) ^ set(self.keys) | set(args) ^ set(self.args)
            raise ValueError(f"{self.name}: missing or unknown {sorted(wrong)}")
        tails = tails or {}
        if tuple(tails) != self.key_tails[: len(tails)] or set(tails) - set(self.key_tails):
            raise ValueError(f"{self.name}: key tails {list(tails)}, not {self.key_tails}")
        tail_keys = [key for name in self.key_tails for key in tails.get(name, ())]
        return (
            [keys[name] for name in self.keys] + tail_keys + list(more_keys),
            [args[name] for name in self.args] + list(more_args),
        )

    def answer_of(self, reply: Sequence[Any]) -> dict[str, Any]:
        """A reply that starts with a status word as {"status": word, field: value...} (a field
        the function left out is None); a status word the spec does not declare is refused."""
        status = str(reply[0])
        shapes = {words[0]: words[1:] for words in (shape.split() for shape in self.replies)}
        if status not in shapes:
            raise ValueError(f"{self.name}: no status {status!r} in {sorted(shapes)}")
        names, rest = shapes[status], list(reply[1:])
        answer: dict[str, Any] = {"status": status}
        for i, name in enumerate(names):
            if name.startswith("*"):
                answer[name[1:]] = rest[i:]
                return answer
            answer[name] = rest[i] if i < len(rest) else None
        if len(rest) > len(names):
            raise ValueError(f"{self.name}: {status!r} with {len(rest)} fields, not {names}")
        return answer

    def reply_of(self, reply: Sequence[Any]) -> dict[str, Any]:
        """A list reply's fields by name; a field the function left out is None."""
        if len(reply) > len(self.reply):
            raise ValueError(f"{self.name}: a reply of {len(reply)} fields, not {self.reply}")
        return {name: reply[i] if i < len(reply) else None for i, name in enumerate(self.reply)}
