"""The site benchmark's data set: buyers, the demo catalog plus generated books, a partly
booked season, all loaded through the apps' own services."""

from __future__ import annotations

import datetime as dt
import io
import random
import secrets
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from bench.site_common import BUYERS, FREE_BOX_FIRST, GENERATED_BOOKS, log

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
    from booking.domain.parser import SlotRequest
    from booking.domain.rules import booking_new_id, day_refusal, season_days, site_today
    from booking.engine.claims import booking_claim

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
