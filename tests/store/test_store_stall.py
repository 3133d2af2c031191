"""A stalled embedded store is waited for, never replaced: one server per data directory.

A stopped server (SIGSTOP, a long fsync, a paused VM) still owns its append-only file. Starting
a second server on the same directory while it sleeps lets each accept bookings the other does
not know of; these tests stop the real server while the real site serves and count servers and
winners afterwards.
"""

from __future__ import annotations

import contextlib
import http.cookiejar
import os
import secrets
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

from strongroom import embedded
from strongroom.store import connect
from tests.conftest import person_make, serve_site, site_env

BUYERS = 20
ID_ALPHABET = "abcdefghijklmnopqrstuvwxyz234567"


def servers_on(data_dir: Path) -> list[int]:
    """The pids of every valkey-server process listening on this data directory's socket."""
    needle = str(embedded.socket_path(data_dir)).encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if b"valkey-server" in cmdline and needle in cmdline:
            found.append(int(entry.name))
    return found


class Browser:
    """A cookie-keeping HTTP client that logs in through the real form."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(self.jar), NoRedirect()
        )

    def request(self, path: str, form: dict[str, str] | None = None) -> tuple[int, str]:
        data = None
        if form is not None:
            token = next((c.value for c in self.jar if c.name == "csrftoken"), "")
            data = urllib.parse.urlencode({**form, "csrfmiddlewaretoken": token or ""}).encode()
        try:
            with self.opener.open(self.base + path, data=data, timeout=30) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def log_in(self, username: str, password: str) -> None:
        self.request("/accounts/login/")
        status, _ = self.request(
            "/accounts/login/", {"username": username, "password": password, "next": "/"}
        )
        assert status == 302, f"login of {username} answered {status}"


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def wait_for(check: Callable[[], object], timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.2)
    return False


@contextlib.contextmanager
def served_on_embedded(data_dir: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """The real site (gunicorn, two workers) on the embedded Valkey of `data_dir`, answering;
    the site and the store stopped afterwards, whatever happened."""
    env = site_env("", data_dir)
    env.pop("REDIS_URL")
    site, base = serve_site(env, workers=2)
    try:
        assert wait_for(lambda: status_of(base, "/healthz") == 200)
        yield site, base
    finally:
        site.terminate()
        site.wait(timeout=15)
        embedded.stop(data_dir)


def new_id(room: str) -> str:
    return f"{room}-" + "".join(secrets.choice(ID_ALPHABET) for _ in range(26))


def status_of(base: str, path: str) -> int:
    try:
        with urllib.request.urlopen(base + path, timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def test_a_stopped_store_is_waited_for_and_twenty_racing_buyers_get_one_booking(
    tmp_path: Path,
) -> None:
    with served_on_embedded(tmp_path) as (_site, base):
        store = connect(embedded.url_for(tmp_path))
        people = [person_make(store, f"racer{n:02d}") for n in range(BUYERS)]
        browsers = []
        for someone in people:
            browser = Browser(base)
            browser.log_in(someone.username, someone.password)
            browsers.append(browser)
        [pid] = servers_on(tmp_path)

        # Stop the server for 10 s while signed-in pages and health checks keep coming.
        os.kill(pid, signal.SIGSTOP)
        statuses: list[int] = []
        during: list[list[int]] = []
        # A booking sent into the stall may be done or not: the answer offers the same form
        # again (with its booking id), not a "try again" link that would GET a POST-only page.
        stalled = {"cls": "A", "room": "8", "date": "2026-12-11", "booking_id": new_id("008")}
        try:
            status, page = browsers[1].request("/book/claim/", stalled)
            assert status == 503 and "could not tell whether this went through" in page
            assert f'name="booking_id" value="{stalled["booking_id"]}"' in page
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                statuses.append(browsers[0].request("/")[0])
                statuses.append(status_of(base, "/healthz"))
                during.append(servers_on(tmp_path))
        finally:
            os.kill(pid, signal.SIGCONT)
        assert 503 in statuses and 500 not in statuses, statuses
        assert all(found == [pid] for found in during), during
        assert wait_for(lambda: status_of(base, "/healthz") == 200)
        assert servers_on(tmp_path) == [pid]
        # Pressed again once the store answers: one booking, whether the first got through or not.
        assert browsers[1].request("/book/claim/", stalled)[0] == 302
        assert browsers[1].request("/book/claim/", stalled)[0] == 302
        assert len(store.keys("*:booking:008-*")) == 1

        # Twenty buyers race for one class A room-day through the real booking form.
        outcomes: list[int] = []
        start = threading.Barrier(BUYERS)

        def race(browser: Browser) -> None:
            form = {"cls": "A", "room": "9", "date": "2026-12-10"}
            form["booking_id"] = new_id("009")
            start.wait()
            outcomes.append(browser.request("/book/claim/", form)[0])

        threads = [threading.Thread(target=race, args=(b,)) for b in browsers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert sorted(outcomes) == [302] + [409] * (BUYERS - 1), outcomes
        assert servers_on(tmp_path) == [pid]
        store.close()


def workers_of(master: int) -> set[int]:
    """The pids of gunicorn `master`'s worker processes."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == master:  # field 4: the parent's pid
                found.add(int(entry.name))
    return found


def answer_of(base: str, path: str) -> int | None:
    """The status of `path`, None when nothing answers (the site is gone)."""
    try:
        return status_of(base, path)
    except OSError:
        return None


def test_workers_started_during_a_stall_serve_503_and_then_the_site(tmp_path: Path) -> None:
    # A worker can start while the store is stopped: gunicorn replaces one that died, or a slow
    # boot is overtaken by the stall. It must serve (503 pages), not exit: a worker that fails to
    # boot makes gunicorn's master stop, and the whole site with it.
    with served_on_embedded(tmp_path) as (site, base):
        assert wait_for(lambda: len(workers_of(site.pid)) == 2)
        [pid] = servers_on(tmp_path)
        os.kill(pid, signal.SIGSTOP)
        try:
            before = workers_of(site.pid)
            for worker in before:
                os.kill(worker, signal.SIGKILL)
            # Both replacements boot into the stall; every answer now comes from one of them.
            assert wait_for(lambda: len(workers_of(site.pid) - before) == 2)
            during = [answer_of(base, path) for path in ("/", "/healthz", "/catalog/", "/")]
            time.sleep(3)  # a replacement that exits on a failed boot has done so by now
            during.append(answer_of(base, "/"))
            assert site.poll() is None, "gunicorn stopped: a worker failed to boot in the stall"
        finally:
            os.kill(pid, signal.SIGCONT)
        assert during == [503] * 5, during
        # Once the store answers, the same workers run their startup checks and serve.
        assert wait_for(lambda: answer_of(base, "/") == 200)
        assert status_of(base, "/healthz") == 200
        assert len(workers_of(site.pid) - before) == 2
