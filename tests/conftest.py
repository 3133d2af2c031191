"""The test harness: a real embedded Valkey for the session, flushed before every test; the
real site served by gunicorn on a free port; Debian's Chromium driven by Playwright."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import redis
from django.conf import settings
from django.core.management import call_command
from django.test import Client
from django.utils import translation

from accounts.people import Person
from accounts.visits import visits_discard
from booking.domain.window import window_remember
from booking.web.kept import kept_clear
from strongroom import embedded, embedded_cluster, store
from strongroom.outbox_take import outbox_grouped_forget
from strongroom.serving import LOOPBACK, start_site
from tests import marks_support

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

    from tests.dashboard_support import World

ROOT = Path(__file__).resolve().parent.parent
RAM_DISK = Path("/dev/shm")
RAM_DISK_ROOM = 4 * 2**30  # free bytes it must have: the suite leaves about 110 MB a run


def _temporary_files_in_ram() -> None:
    """The run's temporary files (the stores' append-only files, which they fsync before every
    answer, the served sites', Chromium's profiles) on the machine's RAM disk when it has one
    with room, unless TMPDIR names a place: an fsync there costs no disk write, and a kill -9
    of a store loses nothing either way (the page cache outlives the process). Set before any
    temporary path is made; the processes the tests start inherit it."""
    if os.environ.get("TMPDIR"):
        return
    try:
        mounts = Path("/proc/mounts").read_text().split("\n")
        free = os.statvfs(RAM_DISK)
    except OSError:
        return
    on_ram = any(line.split()[1:3] == [str(RAM_DISK), "tmpfs"] for line in mounts if line)
    if not on_ram or free.f_bavail * free.f_frsize < RAM_DISK_ROOM:
        return
    place = RAM_DISK / f"strongroom-tests-{os.getuid()}"
    place.mkdir(mode=0o700, exist_ok=True)
    os.environ["TMPDIR"] = str(place)
    tempfile.tempdir = None  # tempfile asks TMPDIR again


_temporary_files_in_ram()
# One per checkout: two checkouts' runs at once would otherwise collect their own sources over
# each other's, and a site of one would serve the other's scripts.
_CHECKOUT = hashlib.sha256(str(Path(__file__).resolve().parent.parent).encode()).hexdigest()[:10]
SHARED_STATIC = Path(tempfile.gettempdir()) / f"strongroom-tests-static-{os.getuid()}-{_CHECKOUT}"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-quic",
    "--disable-sync",
]


# --- markers ---------------------------------------------------------------------------------
# `slow`: the test starts processes of its own (a store, a cluster, gunicorn, a browser, Redis
# 7.0, any subprocess), itself or through a fixture; the session's store, which every test uses,
# does not count. `make check` runs the others. `store`: the test uses the session's store in
# this process; the cluster pass runs those that are not slow. Both are read from the code of
# the test and its fixtures (tests/marks_support.py); a test may also be marked by hand.
# `single_node` (by hand): the test reads the store as one server (its connection pool, its
# INFO); a cluster run leaves it out.

_watch = marks_support.ProcessWatch()


def pytest_configure(config: pytest.Config) -> None:
    sys.addaudithook(_watch.hook)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("slow") is None and marks_support.slow(item):
            item.add_marker(pytest.mark.slow)
        if item.get_closest_marker("store") is None and marks_support.uses_store(item):
            item.add_marker(pytest.mark.store)
    marks_support.heavy_files_first(items)
    if ON_CLUSTER:  # a test that reads the store as one server has nothing to do on a cluster
        one_node = [item for item in items if item.get_closest_marker("single_node")]
        if one_node:
            config.hook.pytest_deselected(items=one_node)
            items[:] = [item for item in items if item.get_closest_marker("single_node") is None]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    _watch.item = item
    try:
        yield
    finally:
        _watch.check("its fixtures")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    try:
        yield
    finally:
        _watch.check("its body")
        _watch.item = None


# `STRONGROOM_TEST_STORE=cluster pytest ...` runs the tests on a real 3-primary cluster (make test
# does, for the apps' tests, the budgets and the HTTP flows); unset, on one embedded Valkey.
ON_CLUSTER = os.environ.get("STRONGROOM_TEST_STORE", "") == "cluster"
CLUSTER_PRIMARIES = 3


def _cluster_started(data_dir: Path) -> embedded_cluster.LocalCluster:
    """The session's cluster. The test workers pick free ports at the same moment, and a port
    one of them picked may be bound by another's node before its own starts (seen once in CI:
    every test of that worker failed): then it starts again, on other ports."""
    for attempt in range(2):
        with contextlib.suppress(RuntimeError):
            return embedded_cluster.cluster_start(
                data_dir / f"cluster{attempt}", primaries=CLUSTER_PRIMARIES
            )
    return embedded_cluster.cluster_start(data_dir / "cluster2", primaries=CLUSTER_PRIMARIES)


@pytest.fixture(scope="session")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The data directory of the session's embedded Valkey (the same code `make run` uses), or
    of the session's local cluster."""
    data_dir = tmp_path_factory.mktemp("store")
    cluster = None
    with _watch.shared():  # every test uses this store: starting it does not make a test slow
        if ON_CLUSTER:
            cluster = _cluster_started(data_dir)
            url = cluster.url
        else:
            # Cluster mode, one node owning every slot: a multi-key command whose keys do not
            # share a hash tag fails with CROSSSLOT here, exactly as it would on Redis Cluster.
            url = embedded.ensure_running(data_dir, cluster=True)
    settings.REDIS_URL = url
    # In-process requests use plain static storage; the served site (below) collects static.
    settings.STATIC_ROOT = data_dir / "static"
    settings.STATIC_ROOT.mkdir()
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    # In-process requests gather page views until a test writes them (`visits_flush`): no
    # background thread writing at a moment of its own during a counted block. The served site
    # (live_site) keeps the real once-a-second thread.
    settings.STRONGROOM_VISITS_FLUSH_MS = 0
    # The overview is read on every request here (its worker-held copy has its own test).
    settings.STRONGROOM_OVERVIEW_CACHE_MS = 0
    settings.STRONGROOM_MAP_CACHE_MS = 0
    # In-process, new passwords (sign-ups, changes, the stand-in hash of an unknown name) get
    # Django's fast test hasher, as Django advises for tests; PBKDF2 stays on the list, so the
    # hashes person_make stores (and the served site, on default settings, writes) verify.
    settings.PASSWORD_HASHERS = [
        "django.contrib.auth.hashers.MD5PasswordHasher",
        "django.contrib.auth.hashers.PBKDF2PasswordHasher",
    ]
    store.reset_store()
    # Parallel workers (pytest-xdist) each start a session: one at a time compiles the catalogs.
    lock_path = tmp_path_factory.getbasetemp().parent / "strongroom-buildmessages.lock"
    with lock_path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        call_command("buildmessages", verbosity=0)
    yield data_dir
    store.reset_store()
    if cluster is not None:
        cluster.stop()
    else:
        embedded.stop(data_dir)


@pytest.fixture
def one_server(tmp_path: Path, settings: Any) -> Iterator[redis.Redis]:
    """The site on a store of its own that is one server (not cluster mode), as `make run`'s
    embedded Valkey is: the claim function writes the indexes itself."""
    data_dir = tmp_path / "one-server"
    settings.REDIS_URL = embedded.ensure_running(data_dir)
    store.reset_store()
    try:
        yield store.get_store()
    finally:
        store.reset_store()
        embedded.stop(data_dir)


@pytest.fixture(autouse=True)
def r(store_dir: Path) -> redis.Redis:
    """The store, empty at the start of every test (functions stay loaded)."""
    client = store.get_store()
    client.flushall()
    visits_discard()  # page views gathered by an earlier test belong to its flushed store
    window_remember(None)  # the flushed store holds no sales window (and none is read again)
    kept_clear()  # pieces kept from an earlier test's rooms
    outbox_grouped_forget()  # outboxes (and their groups) an earlier test's store had
    # A Chinese page leaves its language active in this thread (LocaleMiddleware activates, and
    # nothing deactivates after the answer): every test starts in the site's default language.
    translation.deactivate()
    return client


def site_env(store_url: str, data_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of a served site under test: production mode on the test store. The
    fault tests book hundreds of times with a few buyers: the hourly allowance of bookings per
    buyer is raised (tests/booking/web/test_booking_pages.py checks the allowance itself)."""
    env = {**os.environ, "REDIS_URL": store_url, "STRONGROOM_DATA_DIR": str(data_dir)}
    # One collection of the static files for every served site of the run (and the next runs
    # while the sources stay the same): collecting costs seconds a site.
    env.setdefault("STRONGROOM_STATIC_DIR", str(SHARED_STATIC))
    # Open pages poll every second instead of every five: the browser tests that wait for a
    # change to show are that much shorter (tests/booking/web/test_booking_map_refresh.py
    # checks the setting itself).
    env.update(
        {
            "DEBUG": "0", "SECURE_COOKIES": "0", "STRONGROOM_BOOKINGS_PER_HOUR": "100000",
            "STRONGROOM_POLL_SECONDS": "1", **extra,
        }
    )  # fmt: skip
    return env


def serve_site(env: dict[str, str], *, workers: int = 2) -> tuple[subprocess.Popen[bytes], str]:
    """Start gunicorn as users run it; return the process and its base URL once it answers."""
    return start_site(env, workers=workers)


@pytest.fixture(scope="session")
def live_site(store_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The real site served by gunicorn on a free port, on the session's store. Without its
    mail sender and keeper: it lives on for the rest of the worker's session, and they would
    send, drain and settle on that store behind every later test, under the site's settings
    (a booking a test left unconfirmed was settled by the keeper's drain). None of its tests
    needs either."""
    env = site_env(str(settings.REDIS_URL), tmp_path_factory.mktemp("site"))
    process, base = serve_site({**env, "STRONGROOM_MAIL_SENDER": "0", "STRONGROOM_KEEPER": "0"})
    yield base
    process.terminate()
    process.wait(timeout=10)


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    """Debian's Chromium, headless, driven by Playwright."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: `make test` installs Debian's chromium as root")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Browser, live_site: str) -> Iterator[Page]:
    """A fresh browser context (no cookies) and page on the live site."""
    context = browser.new_context(base_url=live_site, locale="en-US")
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture(scope="session")
def screenshot_dir() -> Path:
    """Where browser tests leave screenshots (ignored by git)."""
    path = ROOT / "screenshots"
    path.mkdir(exist_ok=True)
    return path


# --- people (accounts) ---------------------------------------------------------------------


@dataclass(frozen=True)
class Someone:
    """A created Person and the password they log in with (attributes pass through)."""

    person: Person
    password: str

    @property
    def id(self) -> int:
        return self.person.id

    @property
    def username(self) -> str:
        return self.person.username

    @property
    def is_staff(self) -> bool:
        return self.person.is_staff

    def __getattr__(self, name: str) -> object:
        return getattr(self.person, name)


_hash_cache: dict[str, str] = {}


# The people of the tests get PBKDF2 hashes of few rounds: Django's default hasher, which the
# served site (default settings) accepts, but quick to check for every login a test makes.
# Nothing upgrades a stored hash (the site checks passwords without a setter).
PERSON_HASH_ROUNDS = 1000


def person_make(
    client: redis.Redis, username: str, *, is_staff: bool = False, password: str = ""
) -> Someone:
    """Store a person quickly: each password is hashed once per test session, not per test."""
    from django.contrib.auth.hashers import PBKDF2PasswordHasher

    from accounts.services import person_register

    password = password or f"{username}-pass-Wq7z"
    if password not in _hash_cache:
        hasher = PBKDF2PasswordHasher()
        _hash_cache[password] = hasher.encode(
            password, hasher.salt(), iterations=PERSON_HASH_ROUNDS
        )
    person = person_register(
        client=client, username=username, password_hash=_hash_cache[password], is_staff=is_staff
    )
    return Someone(person=person, password=password)


@pytest.fixture
def buyer(r: redis.Redis) -> Someone:
    return person_make(r, "Buyer_Anna")


@pytest.fixture
def second_buyer(r: redis.Redis) -> Someone:
    return person_make(r, "buyer.bo")


@pytest.fixture
def staff(r: redis.Redis) -> Someone:
    return person_make(r, "Curator", is_staff=True)


def signed_in_session(client: redis.Redis, someone: Someone | Person) -> str:
    """The key of a new session in the store signed in as `someone`, as the login form makes
    one (accounts.sessions)."""
    from django.contrib.sessions.backends.base import SessionBase

    from accounts.selectors import person_with_password
    from accounts.sessions import SessionStore, session_sign_in

    person = someone.person if isinstance(someone, Someone) else someone
    found = person_with_password(client=client, person_id=person.id)
    assert found is not None, f"{person} is not in the store"
    session: SessionBase = SessionStore()
    session_sign_in(session, person=found[0], password_hash=found[1])
    session.save()
    assert session.session_key is not None  # save() made one
    return session.session_key


@pytest.fixture
def client_for(r: redis.Redis) -> Callable[[Someone | Person], Client]:
    """A function: person -> a django.test.Client signed in as them (a real store session)."""

    def make(someone: Someone | Person) -> Client:
        client = Client()
        client.cookies[settings.SESSION_COOKIE_NAME] = signed_in_session(r, someone)
        return client

    return make


def browser_login(page: Page, person: Someone) -> None:
    """Log in through the real login form of the live site (Playwright `page`): for the tests
    whose subject is the login; the others use `browser_sign_in`."""
    page.goto("/accounts/login/")
    page.fill("input[name=username]", person.username)
    page.fill("input[name=password]", person.password)
    with page.expect_navigation():
        page.click("form[action='/accounts/login/'] button[type=submit]")


def browser_sign_in(page: Page, person: Someone) -> None:
    """Sign `person` in on `page`'s browser with a session made in the store, as the login form
    would make it: two page loads fewer (the form and the page after it) for a browser test
    whose subject is not the login. The form itself is driven in the browser by
    tests/accounts/test_accounts_browser.py and tests/site/test_after_browser.py."""
    cookie = {
        "name": settings.SESSION_COOKIE_NAME,
        "value": signed_in_session(store.get_store(), person),
        "domain": LOOPBACK, "path": "/", "httpOnly": True, "sameSite": "Lax",
    }  # fmt: skip
    page.context.add_cookies([cookie])  # type: ignore[list-item]


# --- dashboard ---------------------------------------------------------------------------------


@pytest.fixture
def world(r: redis.Redis, buyer: Someone, second_buyer: Someone, staff: Someone) -> World:
    """The dashboard tests' small booking world (tests/dashboard_support.py: World)."""
    from tests.dashboard_support import world_make

    return world_make(r, buyer, second_buyer, staff)
