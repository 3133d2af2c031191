"""`make bench` / `python -m bench`: the site benchmark, then how to run the others."""

from __future__ import annotations

import sys

from bench import site

OTHERS = """
Other benchmarks (each on its own embedded store in a temporary directory):
  python -m bench.booking           claims/s per durability, round trips, season memory, race
  python -m bench.compaction        memory of a simulated year before/after compaction vs bits
  python -m bench.catalog           result pages and facets on 100,000 generated books
  python -m bench.accounts_bench    login and visit writes, dashboard reads (round trips, time)
  python -m bench.site --help       options of this one (seconds, connections, workers, rows)
  python -m bench.profile_page PATH  pyinstrument profile of one page on this data set
  python -m bench.profile_post       the booking POST's profile (booked, refused; plain, htmx)
"""

if __name__ == "__main__":
    code = site.main(sys.argv[1:])
    print(OTHERS)
    sys.exit(code)
