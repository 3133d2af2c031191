"""The keyspace: hostile key parts cannot forge another key, family or hash slot."""

from __future__ import annotations

import pytest
import redis
from django.core.management import call_command
from redis.crc import key_slot
from redis.exceptions import RedisClusterException

from strongroom.keyspace import FAMILIES, SESSION, declare, escape_part, family_of

HOSTILE = [
    "a:b",
    "{x}",
    "*",
    "with space",
    "new\nline",
    "x" * 200,
    "🦄 emoji",
    "%3A",
    "sr:{session}:session:abc",
    "}{",
    "[a-z]?",
]


@pytest.mark.parametrize("hostile", HOSTILE)
def test_a_hostile_part_stays_inside_its_own_key(hostile: str) -> None:
    key = SESSION.key(session_key=hostile)
    escaped = escape_part(hostile)
    for forbidden in (":", "{", "}", "*", " ", "\n", "?", "["):
        assert forbidden not in escaped
    assert key.count("{") == 1 and key.count("}") == 1
    assert family_of(key) is SESSION
    assert SESSION.parse(key) == {"session_key": hostile}
    # The hash slot is the session's own tag, whatever the input.
    assert key_slot(key.encode()) == key_slot(f"{{session:{escaped}}}".encode())


def test_distinct_inputs_never_share_a_key() -> None:
    keys = {SESSION.key(session_key=value) for value in [*HOSTILE, "a%3Ab", "a b", "a+b"]}
    assert len(keys) == len(HOSTILE) + 3


def test_a_key_of_one_family_is_not_taken_for_another() -> None:
    for family in FAMILIES.values():
        parts = {name: "a:b{c}" for name in family.placeholders}
        key = family.key(**parts)
        assert family_of(key) is family, key


def test_families_are_declared_once() -> None:
    with pytest.raises(ValueError, match="declared twice"):
        declare("session", "{other}:session:<x>", type="string", holds="-", app="strongroom")


def test_a_key_needs_exactly_its_parts() -> None:
    with pytest.raises(TypeError):
        SESSION.key()
    with pytest.raises(TypeError):
        SESSION.key(session_key="a", extra="b")


def test_keyspace_command_counts_live_keys(r: redis.Redis, capsys: pytest.CaptureFixture) -> None:
    for n in range(7):
        r.set(SESSION.key(session_key=f"s{n}"), "x" * 100)
    r.set("sr:stranger", "1")
    call_command("keyspace")
    out = capsys.readouterr().out
    session_row = next(line for line in out.splitlines() if line.startswith("session "))
    assert session_row.split()[3] == "7"
    assert int(session_row.split()[4]) > 700
    undeclared = next(line for line in out.splitlines() if line.startswith("(undeclared)"))
    assert undeclared.split()[3] == "1"


def test_escape_part_fast_path_matches_percent_encoding_exactly() -> None:
    """Parts that need no escaping skip `quote`; every part still escapes exactly as before."""
    from urllib.parse import quote

    from strongroom.keyspace import escape_part

    samples: list[str | int] = [
        "007",
        "abc-DEF_1.2~",
        "",
        "a b",
        "%41",
        "x:y",
        "{t}",
        "*",
        "é",
        "٣",
        "ǅ",
        "\n",
    ]
    samples += ["😀", "2026-12-01", "ｆｕｌｌ", "a\u200bb", 42, -7]
    for value in samples:
        assert escape_part(value) == quote(str(value), safe=""), value


def test_the_suites_store_refuses_commands_across_hash_tags(r: redis.Redis) -> None:
    """The whole suite runs on a cluster (one node, or three primaries), so a cross-tag command
    anywhere fails it (on three primaries redis-py refuses it before sending)."""
    refused = (redis.ResponseError, RedisClusterException)
    with pytest.raises(refused, match=r"same (key )?slot"):
        r.sinter(["sr:{a}:x", "sr:{b}:y"])
    with pytest.raises(refused, match=r"same (key )?slot"):
        r.fcall("booking_claim", 2, "sr:{room:001}:x", "sr:{room:002}:y")
