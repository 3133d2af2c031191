"""Settings are strict: a malformed variable stops start-up with a message naming it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT


def check_with(**env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("DEBUG", "maybe"),
        ("STRONGROOM_ROOM_COUNT", "three hundred"),
        ("STRONGROOM_ROOM_COUNT", "0"),
        ("STRONGROOM_SEASON_START", "2026-13-01"),
        ("TIME_ZONE", "Mars/Olympus"),
        ("REDIS_URL", "http://localhost:6379"),
        ("STRONGROOM_DURABILITY", "sometimes"),
        ("EMAIL_URL", "http://mail.example"),
        ("EMAIL_URL", "smtp://mail.example:25?tls=yes"),
        ("STRONGROOM_SITE_URL", "ftp://strongroom.example"),
        ("PASSWORD_RESET_MINUTES", "0"),
        ("STRONGROOM_WAITS_PER_BUYER", "lots"),
    ],
)
def test_a_malformed_variable_stops_start_up_naming_it(name: str, value: str) -> None:
    result = check_with(**{name: value})
    assert result.returncode != 0
    assert name in result.stderr
    assert "Traceback" not in result.stderr.splitlines()[-1]


def test_without_debug_a_secret_key_is_required() -> None:
    result = check_with(DEBUG="0", SECRET_KEY="")
    assert result.returncode != 0
    assert "SECRET_KEY" in result.stderr


def test_good_settings_pass_the_check() -> None:
    assert check_with(STRONGROOM_ROOM_COUNT="12", TIME_ZONE="Europe/Paris").returncode == 0
