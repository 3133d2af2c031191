"""Cookies are Secure whenever DEBUG=0; the one opt-out is `make run`'s plain-HTTP demo on
loopback, which says so (issue 33, point 5)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

# Stands in for the virtualenv's python: prints what `manage.py serve` would have been given.
FAKE_PYTHON = """#!/bin/sh
if [ "$1" = "-c" ]; then echo not-a-real-key; exit 0; fi
echo "serve SECURE_COOKIES=${SECURE_COOKIES-unset}"
"""


def make_run(tmp_path: Path, **env: str) -> str:
    """What `make run` prints and hands to the server, run with a stand-in python."""
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    (tmp_path / "pyproject.toml").write_text("")
    stamp = tmp_path / "stamp"
    stamp.write_text("")
    python = tmp_path / "python"
    python.write_text(FAKE_PYTHON)
    python.chmod(0o755)
    given = ("SECURE_COOKIES", "BEHIND_PROXY", "BIND")
    clean = {k: v for k, v in os.environ.items() if k not in given}
    result = subprocess.run(
        ["make", "--no-print-directory", "run", f"PY={python}", f"STAMP={stamp}"],
        cwd=tmp_path, env={**clean, **env}, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return result.stdout


def test_the_production_recipe_behind_a_proxy_keeps_secure_cookies(tmp_path: Path) -> None:
    out = make_run(tmp_path, BEHIND_PROXY="1", BIND="127.0.0.1:8000")
    assert "serve SECURE_COOKIES=unset" in out
    assert "not marked Secure" not in out


def test_a_public_address_keeps_secure_cookies(tmp_path: Path) -> None:
    assert "serve SECURE_COOKIES=unset" in make_run(tmp_path, BIND="0.0.0.0:8000")


def test_the_loopback_demo_opts_out_and_says_so(tmp_path: Path) -> None:
    out = make_run(tmp_path)
    assert "serve SECURE_COOKIES=0" in out
    assert "cookies are not marked Secure (SECURE_COOKIES=0)" in out


def test_an_explicit_choice_is_kept(tmp_path: Path) -> None:
    assert "serve SECURE_COOKIES=1" in make_run(tmp_path, SECURE_COOKIES="1")
    assert "not marked Secure" not in make_run(tmp_path, SECURE_COOKIES="1")


@pytest.mark.parametrize(("extra", "secure"), [({}, "True"), ({"SECURE_COOKIES": "0"}, "False")])
def test_without_debug_the_cookies_are_secure_unless_opted_out(
    extra: dict[str, str], secure: str
) -> None:
    env = {k: v for k, v in os.environ.items() if k != "SECURE_COOKIES"}
    script = (
        "import django; django.setup(); from django.conf import settings; "
        "print(settings.SESSION_COOKIE_SECURE, settings.CSRF_COOKIE_SECURE)"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60,
        env={**env, "DEBUG": "0", "SECRET_KEY": "x" * 50,
             "DJANGO_SETTINGS_MODULE": "strongroom.settings", **extra},
    )  # fmt: skip
    assert result.stdout.split() == [secure, secure], result.stderr
