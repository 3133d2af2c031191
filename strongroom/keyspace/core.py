"""How key names are made: escaping user parts, the Family type, `declare` and the
registry of every family (see strongroom/keyspace/__init__.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import quote, unquote

from django.conf import settings

_PLACEHOLDER = re.compile(r"<(\w+)>")


# What `quote(..., safe="")` leaves alone: ASCII letters, digits and `_.-~`.
_UNESCAPED = re.compile(r"[A-Za-z0-9_.~-]+")


def escape_part(value: object) -> str:
    """Escape one key part: letters, digits and `_.-~` stay, everything else becomes %XX.

    The mapping is injective (`%` itself is escaped), so two inputs never share a key. Parts
    that need no escaping (room numbers, ids, dates) skip `quote`, which dominated key building
    on pages that read thousands of keys (measured by bench/profile_page.py).
    """
    text = value if isinstance(value, str) else str(value)
    if _UNESCAPED.fullmatch(text):
        return text
    return quote(text, safe="")


def unescape_part(part: str) -> str:
    """The inverse of `escape_part`, for showing key parts to staff."""
    return unquote(part)


@dataclass(frozen=True)
class Family:
    """One key family: `pattern` names its parts as <placeholders>; `{...}` is the hash tag."""

    name: str
    pattern: str
    type: str
    holds: str
    app: str
    why: str = ""
    placeholders: tuple[str, ...] = field(init=False)

    _chunks: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not re.fullmatch(r"\{[^{}]+\}(:[^{}:]+)+", self.pattern):
            raise ValueError(f"{self.name}: a pattern is {{tag}}:part:part..., not {self.pattern}")
        object.__setattr__(self, "placeholders", tuple(_PLACEHOLDER.findall(self.pattern)))
        # Literal text and placeholder names alternate: key() joins them without a regex.
        object.__setattr__(self, "_chunks", tuple(_PLACEHOLDER.split(self.pattern)))

    @property
    def tag(self) -> str:
        """The hash tag, with its placeholders (`{room:<room>}`)."""
        return self.pattern[: self.pattern.index("}") + 1]

    def key(self, **parts: object) -> str:
        """The key for these parts; every placeholder must be given, each is escaped."""
        if len(parts) != len(self.placeholders) or any(p not in parts for p in self.placeholders):
            raise TypeError(f"{self.name} takes {self.placeholders}, got {tuple(parts)}")
        chunks = self._chunks
        pieces = [settings.STRONGROOM_KEY_PREFIX, ":", chunks[0]]
        for i in range(1, len(chunks), 2):
            pieces.append(escape_part(parts[chunks[i]]))
            pieces.append(chunks[i + 1])
        return "".join(pieces)

    def matches(self, key: str) -> bool:
        """Whether `key` belongs to this family (used to classify keys found by SCAN)."""
        return self.regex().fullmatch(key) is not None

    def regex(self) -> re.Pattern[str]:
        literal = [re.escape(chunk) for chunk in _PLACEHOLDER.split(self.pattern)[::2]]
        body = r"[^:{}]+".join(literal)
        return re.compile(re.escape(settings.STRONGROOM_KEY_PREFIX) + ":" + body)

    def parse(self, key: str) -> dict[str, str]:
        """The unescaped parts of one of this family's keys."""
        literal = [re.escape(c) for c in _PLACEHOLDER.split(self.pattern)[::2]]
        groups = "".join(
            chunk + (f"(?P<{name}>[^:{{}}]+)" if i < len(self.placeholders) else "")
            for i, (chunk, name) in enumerate(zip(literal, [*self.placeholders, ""], strict=True))
        )
        match = re.fullmatch(re.escape(settings.STRONGROOM_KEY_PREFIX) + ":" + groups, key)
        if match is None:
            raise ValueError(f"{key!r} is not a {self.name} key")
        return {name: unescape_part(value) for name, value in match.groupdict().items()}


FAMILIES: dict[str, Family] = {}


def declare(name: str, pattern: str, *, type: str, holds: str, app: str, why: str = "") -> Family:
    """Declare a key family once; a second family with the same name or pattern is an error."""
    family = Family(name, pattern, type, holds, app, why)
    if name in FAMILIES or any(f.pattern == pattern for f in FAMILIES.values()):
        raise ValueError(f"key family {name} ({pattern}) is declared twice")
    FAMILIES[name] = family
    return family


def family_of(key: str) -> Family | None:
    """The declared family a key belongs to, or None for a stranger."""
    for family in FAMILIES.values():
        if family.matches(key):
            return family
    return None


def prefix_pattern() -> str:
    """A SCAN MATCH pattern for every key of this site."""
    return f"{settings.STRONGROOM_KEY_PREFIX}:*"
