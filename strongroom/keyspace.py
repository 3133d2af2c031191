"""The keyspace: the one module that turns domain values into Redis key names.

Every key family is declared once below with its pattern, Redis type, what it holds, the app
that owns it and its cluster hash tag. Keys read `<prefix>:{<tag>}:<family>:<part>:...`,
the classic colon convention. Parts that come from users are percent-escaped, so they can
never contain `:`, `{`, `}`, `*` or white space: no input can forge another key or a hash tag.
Multi-key operations only combine families that share a tag, so they run on Redis Cluster.

Nothing else in the project writes a key name; Lua functions receive theirs in KEYS[].
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import quote, unquote

from django.conf import settings

_PLACEHOLDER = re.compile(r"<(\w+)>")


def escape_part(value: object) -> str:
    """Escape one key part: letters, digits and `_.-~` stay, everything else becomes %XX.

    The mapping is injective (`%` itself is escaped), so two inputs never share a key.
    """
    return quote(str(value), safe="")


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

    def __post_init__(self) -> None:
        if not re.fullmatch(r"\{[^{}]+\}(:[^{}:]+)+", self.pattern):
            raise ValueError(f"{self.name}: a pattern is {{tag}}:part:part..., not {self.pattern}")
        object.__setattr__(self, "placeholders", tuple(_PLACEHOLDER.findall(self.pattern)))

    @property
    def tag(self) -> str:
        """The hash tag, with its placeholders (`{room:<room>}`)."""
        return self.pattern[: self.pattern.index("}") + 1]

    def key(self, **parts: object) -> str:
        """The key for these parts; every placeholder must be given, each is escaped."""
        if set(parts) != set(self.placeholders):
            raise TypeError(f"{self.name} takes {self.placeholders}, got {tuple(parts)}")
        body = _PLACEHOLDER.sub(lambda m: escape_part(parts[m.group(1)]), self.pattern)
        return f"{settings.STRONGROOM_KEY_PREFIX}:{body}"

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


# --- strongroom (the site itself) ----------------------------------------------------------

SESSION = declare(
    "session",
    "{session}:session:<session_key>",
    type="string",
    holds="one Django session, signed and encoded by Django; expires with the session",
    app="strongroom",
    why="a string with a TTL is the whole need: read whole, written whole, expired by the server",
)
CACHE = declare(
    "cache",
    "{cache}:cache:<version>:<key>",
    type="string",
    holds="disposable cached values (Django cache API); never primary data",
    app="strongroom",
)


def cache_key(key: str, key_prefix: str, version: int) -> str:
    """Django's KEY_FUNCTION: cache keys come from the keyspace like every other key."""
    return CACHE.key(version=version, key=f"{key_prefix}{key}")


# --- accounts ------------------------------------------------------------------------------

# --- booking -------------------------------------------------------------------------------

# --- catalog -------------------------------------------------------------------------------

# --- dashboard -----------------------------------------------------------------------------
