"""The site benchmark (`make bench`, or `python -m bench.site`).

Starts its own embedded Valkey in a temporary directory, loads a realistic data set through the
apps' own services (the demo data, a few hundred buyers, the demo catalog plus generated books,
a partly booked season), serves the site with gunicorn exactly as production does (DEBUG=0,
sync workers, WEB_CONCURRENCY or 2 x cores), and drives it with wrk (Debian's package; installed
when missing and we are root). wrk is pinned with taskset to its own core(s) where the machine
has them. Every row runs a warm-up, then a measured run at the same concurrency.

Two reference rows are measured in the same run: a bare Django view returning a short text and
a bare view rendering the site's base template without touching the store (bench/views.py,
routed only when STRONGROOM_BENCH_VIEWS=1). Each of the site's rows is also given as a ratio of
the base-template row's requests/s.

Prints one Markdown table, writes it to bench/results/<date>.md and refreshes the quote in the
README (between the `bench:site` markers).
"""

from __future__ import annotations

import argparse
import datetime as dt
import http.client
import io
import json
import os
import platform
import random
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from strongroom.serving import start_site

ROOT = Path(__file__).resolve().parent.parent
WRK_SCRIPT = ROOT / "bench" / "wrk" / "site.lua"
RESULTS_DIR = ROOT / "bench" / "results"
README = ROOT / "README.md"
README_START = "<!-- bench:site:start -->"
README_END = "<!-- bench:site:end -->"

BUYERS = 300
GENERATED_BOOKS = 20_000
# Class C boxes the data set never takes: the distinct-slot POST row books among these.
FREE_BOX_FIRST = 51
FREE_BOX_COUNT = 50
# Logged-in buyers the POST rows rotate over.
POSTING_BUYERS = 32


# --- set-up ------------------------------------------------------------------------------------


def log(message: str) -> None:
    """Progress on stderr, so stdout carries only the table."""
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def ensure_wrk() -> str:
    """The wrk binary; Debian's package is installed when missing and we are root."""
    found = shutil.which("wrk")
    if found:
        return found
    if os.geteuid() != 0:
        sys.exit("wrk is missing: install Debian's package (apt-get install wrk) and rerun.")
    log("installing wrk (apt-get)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-qq", "wrk"]
    if subprocess.run(install, env=env, capture_output=True).returncode != 0:
        subprocess.run(["apt-get", "update", "-qq"], env=env, check=True, capture_output=True)
        subprocess.run(install, env=env, check=True, capture_output=True)
    found = shutil.which("wrk")
    if not found:
        sys.exit("wrk could not be installed")
    return found


@dataclass(frozen=True)
class Placement:
    """Which CPUs the load generator and the server get."""

    wrk_cpus: list[int]
    server_cpus: list[int]
    note: str


def placement() -> Placement:
    """wrk on the last core(s); the server on the rest when there are enough cores to split."""
    cpus = sorted(os.sched_getaffinity(0))
    if not shutil.which("taskset") or len(cpus) < 2:
        return Placement([], [], "wrk not pinned (one core or no taskset)")
    if len(cpus) >= 4:
        wrk_count = max(1, len(cpus) // 4)
        wrk, server = cpus[-wrk_count:], cpus[:-wrk_count]
        return Placement(wrk, server, f"wrk pinned to CPU {_cpus(wrk)}, server to {_cpus(server)}")
    return Placement(
        cpus[-1:],
        [],
        f"wrk pinned to CPU {cpus[-1]}; the server uses every core (too few to split)",
    )


def _cpus(cpus: list[int]) -> str:
    return ",".join(str(c) for c in cpus)


def configure(data_dir: Path, secret: str) -> dict[str, str]:
    """Environment of the served site and of this process; then set Django up."""
    env = {
        "DJANGO_SETTINGS_MODULE": "strongroom.settings",
        "DEBUG": "0",
        "SECRET_KEY": secret,
        "SECURE_COOKIES": "0",
        "STRONGROOM_DATA_DIR": str(data_dir),
        "STRONGROOM_BENCH_VIEWS": "1",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "LOG_LEVEL": "ERROR",
    }
    os.environ.update(env)
    os.environ.pop("REDIS_URL", None)  # never the user's store: our own, in a temporary dir
    import django

    django.setup()
    from strongroom import store

    # The embedded server starts as `make run` starts it (its fsync policy from the settings);
    # the served site gets its URL, so only this process manages it.
    url = store.store_url()
    return {**os.environ, **env, "REDIS_URL": url}


# --- the data set --------------------------------------------------------------------------------


@dataclass
class DataSet:
    """What was loaded, and what the rows need from it."""

    buyers: list[Any] = field(default_factory=list)
    staff: Any = None
    books: int = 0
    tags: int = 0
    bookings: int = 0
    two_tags: tuple[str, str] = ("", "")
    bookable_days: list[dt.date] = field(default_factory=list)
    demo_lines: list[str] = field(default_factory=list)
    booked_share: dict[str, float] = field(default_factory=dict)


def load_data(client: Any, rng: random.Random) -> DataSet:
    """The demo data of every app, then buyers, generated books and a partly booked season."""
    from django.conf import settings
    from django.contrib.auth.hashers import make_password
    from django.core.management import call_command

    from accounts.services import person_register

    data = DataSet()
    durability = settings.STRONGROOM_DURABILITY
    # Loading is not what is measured: skip WAITAOF while loading (the served site keeps it).
    settings.STRONGROOM_DURABILITY = "none"
    try:
        out = io.StringIO()
        call_command("loaddemo", stdout=out)
        data.demo_lines = [line for line in out.getvalue().splitlines() if line.strip()]

        log(f"{BUYERS} buyers and a staff member")
        password_hash = make_password(secrets.token_urlsafe(16))
        data.buyers = [
            person_register(
                client=client, username=f"bench_buyer_{n:03d}", password_hash=password_hash
            )
            for n in range(1, BUYERS + 1)
        ]
        data.staff = person_register(
            client=client, username="bench_staff", password_hash=password_hash, is_staff=True
        )

        log(f"{GENERATED_BOOKS} generated books")
        data.books, data.tags, data.two_tags = load_books(client, rng)

        log("a partly booked season")
        data.bookable_days, data.bookings, data.booked_share = load_bookings(
            client, rng, data.buyers
        )
    finally:
        settings.STRONGROOM_DURABILITY = durability
    return data


WORDS = (
    "practical",
    "modern",
    "applied",
    "concurrent",
    "distributed",
    "functional",
    "secure",
    "reliable",
    "scalable",
    "effective",
    "advanced",
    "pragmatic",
    "elegant",
    "robust",
    "portable",
    "embedded",
    "parallel",
    "reactive",
    "systems",
    "patterns",
    "algorithms",
    "networks",
    "compilers",
    "databases",
    "interfaces",
    "protocols",
    "architecture",
    "testing",
    "design",
    "programming",
    "engineering",
    "analysis",
    "structures",
    "machines",
)
AUTHORS = (
    "Ada Lin",
    "Bo Chen",
    "Carla Diaz",
    "Dmitri Orlov",
    "Eve Martin",
    "Fang Wu",
    "Gita Rao",
    "Hugo Petit",
    "Ines Silva",
    "Jun Park",
    "Kofi Mensah",
    "Lena Vogel",
    "Mei Tanaka",
    "Nils Berg",
    "Omar Haddad",
)


def load_books(client: Any, rng: random.Random) -> tuple[int, int, tuple[str, str]]:
    """Generated books tagged like the demo catalog (popular tags stay popular)."""
    from catalog.rules import Book
    from catalog.selectors import tags_with_counts
    from catalog.services import books_load

    weighted = tags_with_counts(client=client)
    names = [name for name, _ in weighted]
    weights = [count for _, count in weighted]
    books = []
    for n in range(1, GENERATED_BOOKS + 1):
        tags = set(rng.choices(names, weights=weights, k=rng.randint(1, 4)))
        title = " ".join(rng.choice(WORDS).capitalize() for _ in range(rng.randint(2, 5)))
        books.append(
            Book(
                id=f"gen-{n:06d}",
                title=f"{title}, volume {n}",
                author=", ".join(rng.sample(AUTHORS, rng.randint(1, 2))),
                year=rng.randint(1960, 2025),
                description="A generated book of the benchmark's data set.",
                tags=tuple(sorted(tags)),
            )
        )
    books_load(client=client, books=books)
    counted = tags_with_counts(client=client)
    total = int(client.scard(_catalog_books_key()))
    return total, len(counted), (counted[0][0], counted[1][0])


def _catalog_books_key() -> str:
    from strongroom.keyspace import CATALOG_BOOKS

    return CATALOG_BOOKS.key()


def load_bookings(
    client: Any, rng: random.Random, buyers: list[Any]
) -> tuple[list[dt.date], int, dict[str, float]]:
    """Book about a third of class A room-days, 1-4 hours on half of the class B room-days, and
    two hours of 1-3 of boxes 1-50 on 30% of class C room-days (boxes 51-100 stay free for the
    POST row)."""
    from booking.domain import SlotRequest, booking_new_id, day_refusal, season_days, site_today
    from booking.services import booking_claim

    today = site_today()
    days = [day for day in season_days() if not day_refusal(day, today)]
    if not days:
        sys.exit("no bookable day in the season: set STRONGROOM_SEASON_START/END")
    from django.conf import settings

    rooms = settings.STRONGROOM_ROOM_COUNT
    requests: list[SlotRequest] = []
    for room in range(1, rooms + 1):
        for day in days:
            if rng.random() < 0.33:
                requests.append(SlotRequest("A", room, (day,)))
            if rng.random() < 0.5:
                start = rng.randrange(0, 20)
                requests.append(SlotRequest("B", room, (day,), (start, start + rng.randint(1, 4))))
            if rng.random() < 0.3:
                start = rng.randrange(0, 22)
                boxes = tuple(sorted(rng.sample(range(1, FREE_BOX_FIRST), rng.randint(1, 3))))
                requests.append(SlotRequest("C", room, (day,), (start, start + 2), boxes))
    rng.shuffle(requests)

    def claim(request: SlotRequest) -> bool:
        owner = str(rng.choice(buyers).id)
        result = booking_claim(
            client=client,
            owner_id=owner,
            request=request,
            booking_id=booking_new_id(room=request.room),
        )
        return result.ok

    with ThreadPoolExecutor(max_workers=8) as pool:
        made = sum(pool.map(claim, requests))
    per_class = {cls: sum(1 for r in requests if r.cls == cls) for cls in "ABC"}
    share = {
        "A": per_class["A"] / (rooms * len(days)),
        "B": sum(r.hours[1] - r.hours[0] for r in requests if r.cls == "B" and r.hours)
        / (rooms * len(days) * 24),
    }
    return days, made, share


# --- sessions and CSRF --------------------------------------------------------------------------


def session_cookie(client: Any, person: Any) -> str:
    """A signed-in session in the store, as the login view makes it; returns the cookie pair."""
    from django.conf import settings

    from accounts.selectors import person_with_password
    from accounts.sessions import session_sign_in
    from strongroom.sessions import SessionStore

    found = person_with_password(client=client, person_id=person.id)
    assert found is not None
    session = SessionStore()
    session_sign_in(session, person=found[0], password_hash=found[1])
    session.save()
    return f"{settings.SESSION_COOKIE_NAME}={session.session_key}"


def fetch(
    base: str, path: str, *, method: str = "GET", cookie: str = "", body: str = "",
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, str], str]:  # fmt: skip
    """One request without following redirects: status, headers (lower-case), text."""
    parsed = urllib.parse.urlsplit(base)
    conn = http.client.HTTPConnection(parsed.hostname or "127.0.0.1", parsed.port, timeout=120)
    sent = {**(headers or {})}
    if cookie:
        sent["Cookie"] = cookie
    if body:
        sent["Content-Type"] = "application/x-www-form-urlencoded"
    conn.request(method, path, body=body.encode() if body else None, headers=sent)
    response = conn.getresponse()
    text = response.read().decode("utf-8", "replace")
    found = {name.lower(): value for name, value in response.getheaders()}
    found["set-cookie"] = "\n".join(response.headers.get_all("Set-Cookie") or [])
    conn.close()
    return response.status, found, text


def page_text(html: str) -> str:
    """The visible text of a page's <main> (what the page says went wrong)."""
    main = html.split("<main", 1)[-1]
    # The messages and error lists first: they say why; the rest is the page around them.
    found = re.findall(r'<ul class="(?:messages|errorlist)[^"]*"[^>]*>(.*?)</ul>', main, re.S)
    text = re.sub(r"<[^>]*>", " ", " ".join(found) or main)
    return html[:4] + " " + re.sub(r"\s+", " ", text).strip()


def csrf_identity(base: str, cookie: str, path: str) -> tuple[str, str]:
    """GET a page as a logged-in buyer; return (Cookie header with csrftoken, form token)."""
    from django.conf import settings

    status, headers, text = fetch(base, path, cookie=cookie)
    if status != 200:
        raise RuntimeError(f"GET {path} for a CSRF token answered {status}")
    match = re.search(rf"{settings.CSRF_COOKIE_NAME}=([A-Za-z0-9]+)", headers["set-cookie"])
    token = re.search(r'name="csrfmiddlewaretoken" value="([A-Za-z0-9]+)"', text)
    if not match or not token:
        raise RuntimeError(f"GET {path} gave no CSRF cookie or token")
    return f"{cookie}; {settings.CSRF_COOKIE_NAME}={match.group(1)}", token.group(1)


# --- the served site ----------------------------------------------------------------------------


def serve(env: dict[str, str], workers: int) -> tuple[subprocess.Popen[bytes], str]:
    """collectstatic, then gunicorn as production runs it; returns once /healthz answers."""
    return start_site(env, workers=workers)


# --- rows ---------------------------------------------------------------------------------------


@dataclass
class Row:
    """One line of the table: what wrk sends and what answers count as right."""

    label: str
    path: str
    expect: tuple[int, ...] = (200,)
    method: str = "GET"
    who: str = "anonymous"  # "anonymous", "buyer" or "staff"
    body: str = ""
    slots: str = "fixed"  # POST rows: "distinct" or "fixed"
    headers: dict[str, str] = field(default_factory=dict)
    reference: bool = False
    missing: str = ""  # why the row could not run (e.g. the page does not exist yet)
    alone_ms: float = 0.0  # the preflight: one request on an idle server
    result: dict[str, Any] = field(default_factory=dict)


def bookings_stored(client: Any) -> int:
    """Single-day bookings in the date index (one member per booking and day)."""
    from booking.keys import date_indexes

    pipe = client.pipeline(transaction=False)
    for key in date_indexes():
        pipe.zcard(key)
    return sum(int(count) for count in pipe.execute())


def url(name: str, **kwargs: Any) -> str | None:
    from django.urls import NoReverseMatch, reverse

    try:
        return reverse(name, kwargs=kwargs or None)
    except NoReverseMatch:
        return None


def build_rows(data: DataSet) -> list[Row]:
    """The table's rows, in order; a page that does not exist yet is reported as missing."""
    # The references run first and the base template again last: on a shared machine the two
    # base-template rows show how much the conditions moved during the run (the ratio uses both).
    first = [
        Row("reference: bare view, short text", "/bench/hello", reference=True),
        Row("reference: base template, no store", "/bench/base", reference=True),
    ]
    last = [Row("reference: base template, again at the end", "/bench/base", reference=True)]
    return first + booking_rows(data) + other_rows(data) + last


def booking_rows(data: DataSet) -> list[Row]:
    """Booking page, calendar fragment, POST on distinct free slots and on one contended slot."""
    page, calendar, claim = url("booking:book"), url("booking:calendar"), url("booking:claim")
    if not (page and calendar and claim):
        why = "the booking pages do not exist"
        labels = ("booking page", "calendar fragment", "booking POST, distinct free slots")
        return [Row(label, "", missing=why) for label in (*labels, "booking POST, contended")]
    from booking.forms import Choices

    # A buyer who has picked a class C room, day, hours and box: calendar, hours and boxes.
    day = data.bookable_days[len(data.bookable_days) // 2]
    picked = Choices(
        cls="C", room=42, dates=(day,), start=10, end=12, boxes=(7,), month=day.replace(day=1)
    )
    month = Choices(cls="C", room=42, month=day.replace(day=1))
    htmx = {"HX-Request": "true", "HX-Target": "calendar"}
    form = "csrfmiddlewaretoken={token}&cls=C&room={room}&date={date}&start={hour}&end={hour_end}"
    contended_day = data.bookable_days[0].isoformat()
    contended = (
        f"csrfmiddlewaretoken={{token}}&cls=C&room=7&date={contended_day}&start=9&end=10"
        f"&box={FREE_BOX_FIRST}&booking_id=007-{{uid}}"
    )
    return [
        Row("booking page (class C picked)", f"{page}?{picked.query()}", who="buyer"),
        Row("calendar fragment (htmx)", f"{calendar}?{month.query()}", who="buyer", headers=htmx),
        Row(
            "booking POST, distinct free slots",
            claim,
            method="POST",
            who="buyer",
            body=form + "&box={box}&booking_id={room}-{uid}",
            slots="distinct",
            expect=(302,),
        ),
        Row(
            "booking POST, contended slot",
            claim,
            method="POST",
            who="buyer",
            body=contended,
            expect=(302, 409),
        ),
    ]


def other_rows(data: DataSet) -> list[Row]:
    """Catalog with two tags, the dashboard overview and the two reference views."""
    rows = []
    browse = url("catalog:browse")
    tags = urllib.parse.urlencode({"all": ",".join(data.two_tags)})
    rows.append(
        Row(f"catalog, 2 tags ({' AND '.join(data.two_tags)})", f"{browse}?{tags}", who="buyer")
        if browse
        else Row("catalog, 2 tags", "", missing="catalog:browse does not exist")
    )
    overview = url("dashboard:overview")
    rows.append(
        Row("dashboard overview (staff)", overview, who="staff")
        if overview
        else Row("dashboard overview (staff)", "", missing="dashboard:overview does not exist")
    )
    return rows


# --- running wrk ---------------------------------------------------------------------------------


@dataclass
class Runner:
    wrk: str
    base: str
    place: Placement
    connections: int
    identities: dict[str, list[tuple[str, str]]]
    days: list[dt.date]
    rooms: int
    run_index: int = 0

    def env(self, row: Row) -> dict[str, str]:
        identities = self.identities.get(row.who, [])
        headers = "\n".join(f"{k}: {v}" for k, v in row.headers.items())
        self.run_index += 1
        return {
            **os.environ,
            "SR_MODE": "post" if row.method == "POST" else "get",
            "SR_METHOD": row.method,
            "SR_HEADERS": headers,
            "SR_IDENTITIES": "\n".join(f"{c}\t{t}" for c, t in identities),
            "SR_BODY": row.body,
            "SR_SLOTS": row.slots,
            "SR_DAYS": ",".join(d.isoformat() for d in self.days),
            "SR_ROOMS": str(self.rooms),
            "SR_BOX_FIRST": str(FREE_BOX_FIRST),
            "SR_BOX_COUNT": str(FREE_BOX_COUNT),
            "SR_SLOT_START": str(self.run_index * 2_000_000),
            "SR_EXPECTED_ERROR": str(next((s for s in row.expect if s >= 400), 0)),
        }

    def wrk_command(self, row: Row, seconds: float) -> list[str]:
        threads = max(1, len(self.place.wrk_cpus))
        command = [
            self.wrk, f"-t{threads}", f"-c{self.connections}", f"-d{max(1, round(seconds))}s",
            "--timeout", "10s", "-s", str(WRK_SCRIPT), self.base + row.path,
        ]  # fmt: skip
        if self.place.wrk_cpus:
            command = ["taskset", "-c", _cpus(self.place.wrk_cpus), *command]
        return command

    def run(self, row: Row, seconds: float) -> dict[str, Any]:
        done = subprocess.run(
            self.wrk_command(row, seconds), env=self.env(row), capture_output=True, text=True
        )
        for line in done.stderr.split("SRBAD ")[1:2]:
            log(f"{row.label}: first unexpected answer: {page_text(line)[:800]}")
        for line in done.stdout.splitlines():
            if line.startswith("SRJSON "):
                result = json.loads(line[len("SRJSON ") :])
                result["rps"] = result["requests"] / (result["duration_us"] / 1e6)
                return result
        raise RuntimeError(f"wrk gave no result for {row.label}:\n{done.stdout}\n{done.stderr}")

    def settle(self, limit: float = 90) -> None:
        """Wait until requests still queued from the last row are served (a slow page leaves
        a backlog behind wrk): /healthz must answer quickly three times in a row."""
        deadline = time.monotonic() + limit
        quick = 0
        while quick < 3 and time.monotonic() < deadline:
            started = time.monotonic()
            fetch(self.base, "/healthz")
            quick = quick + 1 if time.monotonic() - started < 0.05 else 0

    def preflight(self, row: Row) -> None:
        """One request as wrk will send it: the status must be the expected one."""
        identities = self.identities.get(row.who, [])
        cookie = identities[0][0] if identities else ""
        body = row.body
        if row.method == "POST":
            from booking.domain import booking_new_id

            day = self.days[-1].isoformat()
            values = {"token": identities[0][1], "uid": booking_new_id(room=1).split("-", 1)[1]}
            if row.slots == "distinct":
                values |= {"room": "001", "date": day, "hour": "0", "hour_end": "1"}
                values |= {"box": str(FREE_BOX_FIRST + FREE_BOX_COUNT - 1)}
            body = re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), m.group(0)), body)
        started = time.monotonic()
        status, _headers, text = fetch(
            self.base, row.path, method=row.method, cookie=cookie, body=body, headers=row.headers
        )
        row.alone_ms = (time.monotonic() - started) * 1000
        if status not in row.expect:
            raise RuntimeError(
                f"{row.label}: {row.method} {row.path} answered {status}, expected {row.expect}:"
                f"\n{text[:1500]}"
            )


# --- report --------------------------------------------------------------------------------------


def table(rows: list[Row]) -> str:
    """The one Markdown table: req/s, p50, p99, ratio to the base-template row."""
    bases = [r.result["rps"] for r in rows if r.path == "/bench/base" and r.result]
    base_rps = sum(bases) / len(bases) if bases else 0.0
    lines = [
        "| page | requests/s | p50 ms | p99 ms | vs base template | alone ms | answers |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        if row.missing:
            lines.append(f"| {row.label} | – | – | – | – | – | not measured: {row.missing} |")
            continue
        res = row.result
        ratio = "" if row.reference or not base_rps else f"{res['rps'] / base_rps:.0%}"
        counts = {**res, "s4xx": res["s4xx"] - res["s409"]}
        answers = ", ".join(
            f"{counts[key]} {key[1:]}"
            for key in ("s2xx", "s3xx", "s409", "s4xx", "s5xx")
            if counts[key]
        )
        errors = sum(res[key] for key in ("connect", "read", "write"))
        if errors:
            answers += f", {errors} socket errors"
        if res["timeout"]:
            answers += f", {res['timeout']} timed out (over 10 s, not in p50/p99)"
        if res.get("note"):
            answers += f"; {res['note']}"
        lines.append(
            f"| {row.label} | {res['rps']:,.0f} | {res['p50_us'] / 1000:.1f} | "
            f"{res['p99_us'] / 1000:.1f} | {ratio} | {row.alone_ms:.1f} | {answers} |"
        )
    return "\n".join(lines)


def machine() -> dict[str, str]:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = os.getloadavg()
    return {
        "cpus": str(os.cpu_count()),
        "model": model or platform.processor(),
        "python": platform.python_version(),
        "load": f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}",
    }


def write_results(text: str, when: dt.datetime) -> Path:
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{when.date().isoformat()}.md"
    path.write_text(text, encoding="utf-8")
    return path


def quote_in_readme(block: str, results: Path) -> bool:
    """Replace the text between the README's bench:site markers with the newest table."""
    if not README.exists():
        return False
    text = README.read_text(encoding="utf-8")
    start, end = text.find(README_START), text.find(README_END)
    if start < 0 or end < start:
        return False
    relative = results.relative_to(ROOT).as_posix()
    quoted = f"{README_START}\nFrom [{relative}]({relative}):\n\n{block}\n{README_END}"
    README.write_text(text[:start] + quoted + text[end + len(README_END) :], encoding="utf-8")
    return True


# --- main ----------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """Run the site benchmark; print the table."""
    parser = argparse.ArgumentParser(prog="python -m bench.site", description=__doc__)
    parser.add_argument("--seconds", type=float, default=10, help="measured seconds per row")
    parser.add_argument("--warmup", type=float, default=2, help="warm-up seconds per row")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument(
        "--workers",
        type=int,
        default=0,
        help="gunicorn workers (default WEB_CONCURRENCY or 2 x cores)",
    )
    parser.add_argument("--only", default="", help="run only rows whose label contains this")
    parser.add_argument(
        "--note", default="", help="a line for the results file (e.g. shared machine)"
    )
    parser.add_argument("--no-write", action="store_true", help="print only; no results file")
    args = parser.parse_args(argv)

    started = dt.datetime.now().astimezone()
    wrk = ensure_wrk()
    place = placement()
    if place.server_cpus:
        os.sched_setaffinity(0, place.server_cpus)  # Valkey and gunicorn inherit it
    workers = args.workers or int(os.environ.get("WEB_CONCURRENCY", 0)) or 2 * (os.cpu_count() or 1)
    data_dir = Path(tempfile.mkdtemp(prefix="sr-bench-site-"))
    server: subprocess.Popen[bytes] | None = None
    before = machine()
    try:
        log(f"embedded store in {data_dir}")
        env = configure(data_dir, secrets.token_urlsafe(40))
        from django.conf import settings

        from strongroom import store

        client = store.get_store()
        info = store.check(client)
        rng = random.Random(20261201)
        t0 = time.monotonic()
        data = load_data(client, rng)
        load_seconds = time.monotonic() - t0
        log(f"data loaded in {load_seconds:.0f} s; starting gunicorn with {workers} workers")
        server, base = serve(env, workers)

        buyer_cookies = [session_cookie(client, b) for b in data.buyers[:POSTING_BUYERS]]
        csrf_page = url("accounts:login") or "/"
        identities = {
            "anonymous": [],
            "buyer": [csrf_identity(base, c, csrf_page) for c in buyer_cookies],
            "staff": [csrf_identity(base, session_cookie(client, data.staff), csrf_page)],
        }
        rows = [r for r in build_rows(data) if args.only.lower() in r.label.lower()]
        runner = Runner(
            wrk, base, place, args.connections, identities, data.bookable_days,
            settings.STRONGROOM_ROOM_COUNT,
        )  # fmt: skip
        for row in rows:
            if row.missing:
                log(f"skip {row.label}: {row.missing}")
                continue
            try:
                runner.preflight(row)
            except RuntimeError as exc:
                log(str(exc))
                row.missing = str(exc).split(":\n", 1)[0].split(": ", 1)[1]
                continue
            log(f"{row.label}: warm-up {args.warmup:.0f} s, then {args.seconds:.0f} s")
            stored = bookings_stored(client)
            warm = runner.run(row, args.warmup) if args.warmup > 0 else {"s3xx": 0}
            runner.settle()  # a slow page's warm-up leaves a queue that would eat the run
            row.result = runner.run(row, args.seconds)
            runner.settle()
            if row.slots == "distinct":
                made = bookings_stored(client) - stored
                redirects = warm["s3xx"] + row.result["s3xx"]
                # Requests in flight when wrk stops are still served: at most one per
                # connection per run is stored without wrk seeing its confirmation.
                late = made - redirects
                ok = 0 <= late <= 2 * args.connections
                row.result["note"] = (
                    f"{'' if ok else 'MISMATCH: '}{made} bookings stored for {redirects} "
                    f"confirmations seen (+{late} answered after wrk stopped)"
                )
        block = table(rows)
    finally:
        if server is not None:
            server.terminate()
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
        from strongroom import embedded

        embedded.stop(data_dir)
        shutil.rmtree(data_dir, ignore_errors=True)

    print(block)
    if args.no_write:
        return 0
    report = results_text(block, started, before, info, workers, place, args, data, load_seconds)
    path = write_results(report, started)
    print(f"\nwritten to {path.relative_to(ROOT)}")
    if quote_in_readme(block, path):
        print("quoted in README.md (Performance)")
    return 0


def results_text(
    block: str, started: dt.datetime, before: dict[str, str], info: dict[str, str], workers: int,
    place: Placement, args: argparse.Namespace, data: DataSet, load_seconds: float,
) -> str:  # fmt: skip
    """The dated results file: conditions, data set, the table (one line per paragraph)."""
    from django.conf import settings

    share = data.booked_share
    busy = float(before["load"].split()[0])
    lines = [
        f"# Site benchmark, {started:%Y-%m-%d %H:%M %Z}",
        "",
        "`make bench` (`python -m bench.site`): gunicorn (sync workers) serving the site with "
        f"`DEBUG=0` on an embedded {info['server']} {info['version']} (AOF, `appendfsync "
        f"{settings.STRONGROOM_EMBEDDED_APPENDFSYNC}`, `STRONGROOM_DURABILITY="
        f"{settings.STRONGROOM_DURABILITY}`), driven by wrk with {args.connections} connections; "
        f"{args.warmup:.0f} s warm-up, then {args.seconds:.0f} s measured per row.",
        "",
        '"vs base template" is the row\'s requests/s as a share of the reference rows that '
        "render the site's base template without touching the store (the mean of the run at "
        'the start and the one at the end). "alone ms" is one '
        "request on the idle server (the check made before each row); p50 and p99 include the "
        f"wait behind the other connections' requests ({args.connections} clients on "
        f"{workers} workers).",
        "",
        f"- Machine: {before['cpus']} CPUs ({before['model']}), Python {before['python']}; "
        f"load average before the run {before['load']}.",
    ]
    if busy > 0.5 * int(before["cpus"]):
        lines.append(
            "- The machine was busy with other work when the run started (1-minute load "
            f"average {busy:.1f} on {before['cpus']} CPUs): compare rows within this run "
            "rather than with other runs."
        )
    if args.note:
        lines.append(f"- Note: {args.note}")
    lines += [
        f"- Server: {workers} gunicorn workers; {place.note}.",
        f"- Data set (loaded in {load_seconds:.0f} s): {len(data.buyers)} buyers and one staff "
        f"member plus the demo people; {data.books:,} books with {data.tags} tags (the demo "
        f"catalog plus {GENERATED_BOOKS:,} generated); {data.bookings:,} bookings over "
        f"{settings.STRONGROOM_ROOM_COUNT} rooms and {len(data.bookable_days)} bookable days "
        f"({share.get('A', 0):.0%} of class A room-days, {share.get('B', 0):.0%} of class B "
        "room-hours, class C: 1-3 of boxes 1-50 for two hours on 30% of room-days).",
        f"- Logged-in rows rotate over {POSTING_BUYERS} buyers' sessions (the dashboard: one "
        "staff session); POST rows carry each buyer's CSRF cookie and token.",
        "",
        block,
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
