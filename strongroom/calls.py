"""Call specs for the apps' Redis Functions: the names of a function's KEYS and ARGV in order,
and of the fields of its reply. The Lua declares the same lists (`<LUA>_KEYS`, `<LUA>_ARGS`) and
reads its call by name; each app's tests read the Lua and check that both sides agree, so the
order of a call exists once per side.

A spec builds a call from named values, `SPEC.call(keys={...}, args={...})`, refuses a missing
or unknown name, and names the fields of a reply (`SPEC.reply_of(reply)`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FunctionSpec:
    """One function's KEYS and ARGV by name, in order (`lua`: the prefix of its tables in the
    Lua). A function that takes a variable number of keys or arguments (tag sets, ids) takes
    them after these (`more_*`). `reply`: the names of a list reply's fields, in order."""

    name: str
    lua: str
    keys: tuple[str, ...]
    args: tuple[str, ...]
    reply: tuple[str, ...] = ()

    def call(
        self,
        *,
        keys: Mapping[str, str],
        args: Mapping[str, object],
        more_keys: Sequence[str] = (),
        more_args: Sequence[object] = (),
    ) -> tuple[list[str], list[object]]:
        """KEYS and ARGV of a call, in the function's order."""
        if set(keys) != set(self.keys) or set(args) != set(self.args):
            wrong = set(keys) ^ set(self.keys) | set(args) ^ set(self.args)
            raise ValueError(f"{self.name}: missing or unknown {sorted(wrong)}")
        return (
            [keys[name] for name in self.keys] + list(more_keys),
            [args[name] for name in self.args] + list(more_args),
        )

    def reply_of(self, reply: Sequence[Any]) -> dict[str, Any]:
        """A list reply's fields by name; a field the function left out is None."""
        if len(reply) > len(self.reply):
            raise ValueError(f"{self.name}: a reply of {len(reply)} fields, not {self.reply}")
        return {name: reply[i] if i < len(reply) else None for i, name in enumerate(self.reply)}
