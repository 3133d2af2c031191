"""Profile the booking POST on the site benchmark's data set: `python -m bench.profile_post`.

Loads the data set as `bench.profile_page` does, signs in the buyers the POST rows rotate over,
and sends booking POSTs (the form the confirm page sends, CSRF checked as a browser's is)
through Django's test client in production mode, for each case:

- `distinct`: every POST books a class C box the data set leaves free (302 to the booking);
- `refused`: every POST asks for a slot booked already (409, "someone was faster"), as 7 of 8
  answers of the contended row are;

each as a plain form POST and as htmx's (HX-Request). Prints, per case, the mean time and the
mean CPU time of this process per request (an unprofiled pass; on a busy machine the CPU time
is the steadier), the store round trips per request, the store's own time and the answer's
size, then pyinstrument's profile of the cases named by `--profile`.

    python -m bench.profile_post --requests 300 --profile refused
"""

from __future__ import annotations

import argparse
import cProfile
import itertools
import pstats
import re
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from bench.profile_page import loaded_site, store_time, web_client
from bench.site_common import FREE_BOX_COUNT, FREE_BOX_FIRST, POSTING_BUYERS

CASES = ("distinct", "refused", "distinct-htmx", "refused-htmx")


@dataclass
class Poster:
    """A signed-in buyer's test client and the CSRF token its forms carry."""

    web: Any
    token: str


def _poster(client: Any, person: Any, *, htmx: bool) -> Poster:
    from django.urls import reverse

    web = web_client(client, person, htmx=False, csrf=True)
    page = web.get(reverse("booking:pick")).content.decode()
    found = re.search(r'name="csrfmiddlewaretoken" value="([A-Za-z0-9]+)"', page)
    if found is None:
        raise RuntimeError("the booking page carries no CSRF token")
    if htmx:
        web.defaults["HTTP_HX_REQUEST"] = "true"
    return Poster(web, found.group(1))


def _free_slots(day: str, rooms: int) -> Iterator[dict[str, str]]:
    """Class C slots nobody has booked: one box for one hour, a new one each time."""
    for n in itertools.count():
        hour = n // FREE_BOX_COUNT % 24
        yield {
            "room": f"{1 + n // (FREE_BOX_COUNT * 24) % rooms:03d}",
            "date": day,
            "start": str(hour),
            "end": str(hour + 1),
            "box": str(FREE_BOX_FIRST + n % FREE_BOX_COUNT),
        }


def _body(poster: Poster, slot: dict[str, str]) -> str:
    from booking.domain.rules import booking_new_id

    booking_id = booking_new_id(room=int(slot["room"]))
    fields = {"csrfmiddlewaretoken": poster.token, "cls": "C", **slot, "booking_id": booking_id}
    return urlencode(fields)


def _cpu_profile(send: Callable[[], Any], requests: int) -> None:
    """cProfile `requests` calls of `send` on this process's CPU time: the top by own time,
    then by cumulative time."""
    profile = cProfile.Profile(time.process_time)
    profile.enable()
    for _ in range(requests):
        send()
    profile.disable()
    stats = pstats.Stats(profile)
    stats.sort_stats("tottime").print_stats(40)
    stats.sort_stats("cumulative").print_stats(80)


def main(argv: list[str] | None = None) -> int:
    """Load the data set, then time and profile booking POSTs."""
    parser = argparse.ArgumentParser(prog="python -m bench.profile_post", description=__doc__)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument(
        "--profile", nargs="*", choices=CASES, default=["distinct", "refused"], metavar="CASE"
    )
    parser.add_argument("--cases", nargs="*", choices=CASES, default=list(CASES), metavar="CASE")
    parser.add_argument(
        "--cpu",
        action="store_true",
        help="cProfile on CPU time (the machine is busy), not pyinstrument",
    )
    parser.add_argument("--flat", action="store_true", help="a flat profile (self time)")
    args = parser.parse_args(argv)

    with loaded_site() as (client, data):
        from django.urls import reverse
        from pyinstrument import Profiler

        from booking.domain.rules import room_count
        from strongroom import store

        path = reverse("booking:claim")
        buyers = data.buyers[:POSTING_BUYERS]
        day = data.bookable_days[-1].isoformat()
        slots = _free_slots(day, room_count())
        taken = next(slots)
        posters = {
            htmx: [_poster(client, buyer, htmx=htmx) for buyer in buyers] for htmx in (False, True)
        }
        form = "application/x-www-form-urlencoded"
        turn = itertools.count()

        def post(case: str) -> Any:
            poster = posters[case.endswith("htmx")][next(turn) % len(buyers)]
            slot = taken if case.startswith("refused") else next(slots)
            return poster.web.post(path, _body(poster, slot), content_type=form)

        first = post("distinct")  # books `taken`
        if first.status_code != 302:
            print(f"POST {path} answered {first.status_code}", file=sys.stderr)
            return 1
        lines = []
        for case in args.cases:
            for _ in range(20):
                post(case)
            with store.round_trips() as trips:
                answer = post(case)
            client.config_resetstat()
            started, cpu_started = time.perf_counter(), time.process_time()
            for _ in range(args.requests):
                post(case)
            mean_ms = (time.perf_counter() - started) / args.requests * 1000
            cpu_ms = (time.process_time() - cpu_started) / args.requests * 1000
            server = store_time(client, args.requests)
            lines.append(
                f"{case:<14} {answer.status_code}  {mean_ms:5.2f} ms per request (unprofiled),"
                f" {cpu_ms:5.2f} ms of this process's CPU,"
                f" {trips.count} round trips, store {server.total_ms:.2f} ms,"
                f" {len(answer.content):,} bytes"
            )
            if case in args.profile and args.cpu:
                print(f"--- {case} (CPU time, cProfile) ---")
                _cpu_profile(lambda: post(case), args.requests)  # noqa: B023 (called at once)
            elif case in args.profile:
                profiler = Profiler(interval=0.0002)
                profiler.start()
                for _ in range(args.requests):
                    post(case)
                profiler.stop()
                print(f"--- {case} ---")
                print(profiler.output_text(unicode=True, color=False, flat=args.flat))
        print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
