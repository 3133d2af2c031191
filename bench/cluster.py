"""The site on a real 3-primary Valkey Cluster: the share of commands each primary serves for a
mixed workload, before and after the key changes that spread the hot families, and what each
durability level costs per confirmed write.

Run: `python -m bench.cluster` (starts its own local cluster of 3 primaries and 3 replicas on
free loopback ports; nothing of yours is touched). Prints Markdown; the figures quoted in the
README come from it.

The workload goes through the whole Django stack in-process (middleware, sessions, views):
per round, a signed-in buyer's home page, booking page (class C picked) and booking POST, the
catalog with two tags, and the staff overview. Commands are counted by each primary itself
(INFO commandstats after CONFIG RESETSTAT); the visits each page gathered are written before
its count is read, so every page pays for its own. Each round is a different buyer: with a
handful of people, the slots of their few session and person keys decide the shares (30 person
ids put 15, 9 and 6 records on the three primaries), not the key layout. "Before" runs the same
code with the old hash tags of the three families this change spread ({session}, {people} for
a person's record, one {bookings} date index): every key of a family in one slot, as before.
The last run reads the catalog from the replicas (STRONGROOM_CATALOG_REPLICA_READS)."""

from __future__ import annotations

import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROUNDS = 300
BUYERS = 300
LATENCY_CALLS = 200
# The families whose tags this change split, and their patterns before it.
OLD_PATTERNS = {
    "session": "{session}:session:<session_key>",
    "person": "{people}:person:<person_id>",
    "booking-by-date": "{bookings}:by-date:<shard>",
}
NOT_WORKLOAD = ("cmdstat_config", "cmdstat_info", "cmdstat_cluster", "cmdstat_command")


def setup() -> None:
    os.environ.setdefault("DEBUG", "1")
    os.environ["ALLOWED_HOSTS"] = "testserver"
    os.environ.setdefault("STRONGROOM_SEASON_START", "2026-12-01")
    os.environ.setdefault("STRONGROOM_SEASON_END", "2026-12-31")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "strongroom.settings")
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import django

    django.setup()


def use_patterns(patterns: dict[str, str]) -> dict[str, str]:
    """Give key families other patterns (returns the previous ones)."""
    import re

    from strongroom.keyspace import _PLACEHOLDER, FAMILIES

    previous = {}
    for name, pattern in patterns.items():
        family = FAMILIES[name]
        previous[name] = family.pattern
        object.__setattr__(family, "pattern", pattern)
        object.__setattr__(family, "placeholders", tuple(_PLACEHOLDER.findall(pattern)))
        object.__setattr__(family, "_chunks", tuple(re.split(r"<(\w+)>", pattern)))
    return previous


def primaries_of(client: Any) -> list[Any]:
    from strongroom.store import primaries

    return primaries(client)


def replicas_of(client: Any) -> list[Any]:
    return [node.redis_connection for node in client.get_replicas()]


def commands_per_primary(client: Any, nodes: list[Any] | None = None) -> list[int]:
    counts = []
    for node in primaries_of(client) if nodes is None else nodes:
        stats = node.info("commandstats")
        counts.append(
            sum(
                int(value["calls"])
                for name, value in stats.items()
                if not name.startswith(NOT_WORKLOAD) and name != "cmdstat_ping"
            )
        )
    return counts


def signed_in(client: Any, person: Any) -> Any:
    from django.conf import settings
    from django.test import Client

    from accounts.selectors import person_with_password
    from accounts.sessions import session_sign_in
    from strongroom.sessions import SessionStore

    found = person_with_password(client=client, person_id=person.id)
    assert found is not None
    session = SessionStore()
    session_sign_in(session, person=found[0], password_hash=found[1])
    session.save()
    browser = Client()
    browser.cookies[settings.SESSION_COOKIE_NAME] = str(session.session_key)
    return browser


def workload(client: Any, label: str, only: tuple[str, ...] = ()) -> dict[str, Any]:
    """Load the demo data, sign people in, reset the counters, run the mixed rounds (of the
    pages named in `only`, when given)."""
    from django.conf import settings
    from django.contrib.auth.hashers import make_password
    from django.core.management import call_command

    from accounts.services import person_register
    from accounts.visits import visits_flush

    client.flushall()
    settings.STRONGROOM_DURABILITY = "none"  # loading is not what is measured
    call_command("loaddemo", verbosity=0, stdout=open(os.devnull, "w"))  # noqa: SIM115
    password = make_password("bench-cluster-password")
    buyers = [
        person_register(client=client, username=f"cluster_buyer_{n:02d}", password_hash=password)
        for n in range(BUYERS)
    ]
    staff = person_register(
        client=client, username="cluster_staff", password_hash=password, is_staff=True
    )
    browsers = [signed_in(client, person) for person in buyers]
    staff_browser = signed_in(client, staff)
    settings.STRONGROOM_DURABILITY = ""
    rng = random.Random(7)
    rounds = []
    # Every POST asks for a slot of its own (no 409 among them): the same work every run.
    slots = rng.sample(range(settings.STRONGROOM_ROOM_COUNT * 30), ROUNDS)
    for n, slot in enumerate(slots):
        room, date = 1 + slot // 30, f"2026-12-{2 + slot % 30:02d}"
        letters = "abcdefghjkmnpqrstvwxyz234567"
        rounds.append(
            (
                browsers[n % BUYERS],
                room,
                date,
                f"{room:03d}-" + "".join(rng.choice(letters) for _ in range(26)),
            )
        )
    pages: dict[str, Any] = {
        "home (signed in)": lambda b, r, d, i: b.get("/"),
        "booking page": lambda b, r, d, i: b.get(
            f"/book/?cls=C&room={r}&date={d}&start=10&end=12&box=7"
        ),
        "booking POST": lambda b, r, d, i: b.post(
            "/book/claim/", {"cls": "A", "room": str(r), "date": d, "booking_id": i}
        ),
        "catalog, 2 tags": lambda b, r, d, i: b.get("/catalog/?all=web&all=algorithms"),
        "staff overview": lambda b, r, d, i: staff_browser.get("/staff/"),
    }
    per_page: dict[str, list[int]] = {}
    on_replicas: dict[str, int] = {}
    statuses: dict[str, list[int]] = {}
    if only:
        pages = {name: page for name, page in pages.items() if name in only}
    visits_flush()
    for name, page in pages.items():
        for node in [*primaries_of(client), *replicas_of(client)]:
            node.config_resetstat()
        for browser, room, date, booking_id in rounds:
            statuses.setdefault(name, []).append(page(browser, room, date, booking_id).status_code)
        visits_flush()
        per_page[name] = commands_per_primary(client)
        on_replicas[name] = sum(commands_per_primary(client, replicas_of(client)))
    counts = [sum(column) for column in zip(*per_page.values(), strict=True)]
    return {
        "label": label,
        "counts": counts,
        "per_page": per_page,
        "statuses": statuses,
        "on_replicas": on_replicas,
    }


def durability_latency(client: Any) -> list[tuple[str, float, float]]:
    """Median and p99 ms of one confirmed write (FCALL + what confirms it, one round trip)."""
    from django.conf import settings

    from strongroom.durable import durable_fcall

    rows = []
    for step, level in enumerate(("none", "aof", "aof+replica")):
        settings.STRONGROOM_DURABILITY = level
        times = []
        for n in range(LATENCY_CALLS):
            # A new person every call: each call writes (and so has something to wait for).
            key = f"sr:{{person:{900000 + step * 10000 + n}}}:person"
            args = [f"lat{n}", f"lat{n}", "hash", 0, 1, f"{level}-{n}"]
            start = time.perf_counter()
            durable_fcall(client, "accounts_person_create", [key], args)
            times.append((time.perf_counter() - start) * 1000)
        times.sort()
        rows.append((level, statistics.median(times), times[int(len(times) * 0.99) - 1]))
    # WAITAOF 1 1 alone: the replica reports its fsync only when asked again (about 1 s).
    key = "sr:{bench}:alone"
    owner = client.get_node_from_key(key).redis_connection
    times = []
    for n in range(5):
        pipe = owner.pipeline(transaction=False)
        pipe.set(key, n)
        pipe.execute_command("WAITAOF", 1, 1, 3000)
        start = time.perf_counter()
        pipe.execute()
        times.append((time.perf_counter() - start) * 1000)
    rows.append(
        ("aof+replica, WAITAOF 1 1 without WAIT first", statistics.median(times), max(times))
    )
    settings.STRONGROOM_DURABILITY = ""
    return rows


def report(runs: list[dict[str, Any]], latency: list[tuple[str, float, float]]) -> str:
    lines = [
        f"Mixed workload on 3 primaries: {ROUNDS} of each of home, booking page, booking POST, "
        "catalog (2 tags) and staff overview through the whole Django stack, "
        f"{BUYERS} signed-in buyers. Share of commands served by each primary:",
        "",
        "| key layout | page | primary 1 | primary 2 | primary 3 | busiest | commands |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for run in runs:
        rows = list(run["per_page"].items())
        if len(rows) > 1:
            rows.append(("the mix (all five)", run["counts"]))
        for page, counts in rows:
            total = sum(counts) or 1
            shares = [count / total for count in counts]
            cells = " | ".join(f"{share:.0%}" for share in shares)
            lines.append(
                f"| {run['label']} | {page} | {cells} | {max(shares):.0%} | {sum(counts):,} |"
            )
    lines += ["", "Commands the replicas served besides (replicated writes included):"]
    for run in runs:
        served = ", ".join(f"{name} {count:,}" for name, count in run["on_replicas"].items())
        lines.append(f"- {run['label']}: {served}")
    lines += ["", "Answers:"]
    for run in runs:
        summary = ", ".join(
            f"{name} {sorted(set(codes))}" for name, codes in run["statuses"].items()
        )
        lines.append(f"- {run['label']}: {summary}")
    lines += [
        "",
        f"One confirmed write on the 3 + 3 cluster ({LATENCY_CALLS} calls each, ms):",
        "",
        "| durability | p50 ms | p99 ms |",
        "|---|---:|---:|",
    ]
    lines += [f"| {name} | {p50:.2f} | {p99:.2f} |" for name, p50, p99 in latency]
    return "\n".join(lines)


def main() -> None:
    setup()
    from django.conf import settings

    from strongroom import embedded_cluster, store

    base = Path(tempfile.mkdtemp(prefix="sr-bench-cluster-"))
    cluster = embedded_cluster.cluster_start(base, primaries=3, replicas=1)
    try:
        settings.REDIS_URL = cluster.url
        store.reset_store()
        client = store.get_store()
        call_quiet = {"verbosity": 0}
        from django.core.management import call_command

        call_command("buildmessages", **call_quiet)
        previous = use_patterns(OLD_PATTERNS)
        runs = [workload(client, "before: {session}, {people}, one {bookings} index")]
        use_patterns(previous)
        runs.append(workload(client, "after: a tag per session and per person, 16 date shards"))
        # The catalog's reads on the replicas (STRONGROOM_CATALOG_REPLICA_READS, see README).
        settings.STRONGROOM_CATALOG_REPLICA_READS = True
        try:
            runs.append(
                workload(client, "after, catalog read from replicas", only=("catalog, 2 tags",))
            )
        finally:
            settings.STRONGROOM_CATALOG_REPLICA_READS = False
        latency = durability_latency(client)
        print(report(runs, latency))
    finally:
        store.reset_store()
        cluster.stop()


if __name__ == "__main__":
    main()
