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
        ("REDIS_URL", "redis+cluster://"),
        ("REDIS_URL", "redis+cluster://127.0.0.1"),
        ("REDIS_URL", "redis+cluster://127.0.0.1:7001,127.0.0.1:port"),
        ("REDIS_URL", "redis+cluster://127.0.0.1:7001/0"),
        ("REDIS_URL", "rediss+cluster://user:secret@:7001"),
        ("STRONGROOM_DURABILITY", "sometimes"),
        ("EMAIL_URL", "http://mail.example"),
        ("EMAIL_URL", "smtp://mail.example:25?tls=yes"),
        ("EMAIL_URL", "smtp://mail.example:0"),
        ("EMAIL_URL", "smtp://mail.example:65536"),
        ("EMAIL_URL", "smtp://mail\u2028example:25"),
        ("EMAIL_URL", "smtp://mail.example?from=nobody"),
        ("EMAIL_URL", "smtp://mail.example?from=a@example.org%0D%0ABcc:%20x@example.org"),
        ("EMAIL_URL", "smtp://mail.example?from=a@ex%E2%80%A8ample.org"),
        ("EMAIL_FROM", "not an address"),
        ("EMAIL_FROM", "Strongroom <a@example.org>\r\nBcc: x@example.org"),
        ("EMAIL_FROM", "a@ex\u2028ample.org"),
        ("STRONGROOM_SITE_URL", "ftp://strongroom.example"),
        ("PASSWORD_RESET_MINUTES", "0"),
        ("STRONGROOM_WAITS_PER_BUYER", "lots"),
        ("STRONGROOM_POLL_SECONDS", "0"),
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


def test_good_mail_settings_pass_the_check() -> None:
    url = "smtp://me:s%40cret@mail.example.org:587?starttls=1&from=Strongroom%20%3Cshop@b%C3%BCcher.example%3E"
    assert check_with(EMAIL_URL=url, EMAIL_FROM="Strongroom <shop@example.org>").returncode == 0


def test_a_cluster_url_with_credentials_and_several_seeds_passes_the_check() -> None:
    url = "rediss+cluster://app:s%40cret@10.0.0.1:7001,10.0.0.2:7002,[::1]:7003"
    assert check_with(REDIS_URL=url).returncode == 0


def test_a_cluster_url_is_parsed_into_seeds_and_credentials() -> None:
    from strongroom.conf import cluster_url_parse

    parsed = cluster_url_parse("rediss+cluster://app:s%40cret@10.0.0.1:7001,[::1]:7003")
    assert parsed.seeds == (("10.0.0.1", 7001), ("::1", 7003))
    assert (parsed.username, parsed.password, parsed.tls) == ("app", "s@cret", True)


def settings_value(name: str, **env: str) -> str:
    """A setting as a fresh process reads it, with `env` (and no BIND or site URL of ours)."""
    script = (
        f"import django; django.setup(); from django.conf import settings; print(settings.{name})"
    )
    base = {k: v for k, v in os.environ.items() if k not in ("BIND", "STRONGROOM_SITE_URL")}
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
        env={**base, "DJANGO_SETTINGS_MODULE": "strongroom.settings", **env},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_links_in_mail_follow_the_bound_address_unless_the_site_url_is_set() -> None:
    def site_url(**env: str) -> str:
        return settings_value("STRONGROOM_SITE_URL", **env)

    assert site_url(BIND="127.0.0.1:8301") == "http://127.0.0.1:8301"
    assert site_url(BIND="0.0.0.0:9000") == "http://localhost:9000"
    assert site_url() == "http://127.0.0.1:8000"
    site = "https://rooms.example.org"
    assert site_url(BIND="127.0.0.1:8301", STRONGROOM_SITE_URL=site) == site


def test_the_sql_and_cache_hooks_are_off_only_while_nothing_is_configured_for_them() -> None:
    """With no SQL database and only the dummy cache (the site's settings), no per-request
    hook of theirs runs; configured, each keeps its hooks. (Django's test client connects
    the SQL hook again after each of its requests, so the test connects them all first.)"""
    from django.conf import settings
    from django.core import signals
    from django.core.cache import close_caches
    from django.db import close_old_connections, reset_queries

    from strongroom.apps import request_hooks_unused_off

    def hooked() -> set[object]:
        started = {r() for _key, r, *_ in signals.request_started.receivers}
        finished = {r() for _key, r, *_ in signals.request_finished.receivers}
        return {f for f in (reset_queries, close_old_connections) if f in started} | {
            f for f in (close_old_connections, close_caches) if f in finished
        }

    def all_connected() -> None:
        signals.request_started.connect(reset_queries)
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)
        signals.request_finished.connect(close_caches)

    try:
        all_connected()
        request_hooks_unused_off(databases=settings.DATABASES, caches=settings.CACHES)
        assert hooked() == set()
        all_connected()
        dummy = {"default": {"ENGINE": "django.db.backends.dummy"}}  # Django's filling of {}
        request_hooks_unused_off(databases=dummy, caches=settings.CACHES)
        assert hooked() == set()
        all_connected()
        locmem = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
        sqlite = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
        request_hooks_unused_off(databases=sqlite, caches=locmem)
        assert hooked() == {reset_queries, close_old_connections, close_caches}
    finally:
        request_hooks_unused_off(databases=settings.DATABASES, caches=settings.CACHES)


def test_a_served_site_runs_no_sql_or_cache_hook() -> None:
    """The site as served (no test client in the process) starts with none of them."""
    code = (
        "import django; django.setup();"
        "import django.core.handlers.wsgi;"
        "from django.core import signals;"
        "print(sorted(r().__name__ for s in (signals.request_started, signals.request_finished)"
        " for _k, r, *_ in s.receivers))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "strongroom.settings", "DEBUG": "1"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['reset_urlconf']"
