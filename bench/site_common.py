"""The site benchmark's paths, sizes and log line, shared by its modules."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WRK_SCRIPT = ROOT / "bench" / "wrk" / "site.lua"
RESULTS_DIR = ROOT / "bench" / "results"
README = ROOT / "docs" / "performance.md"  # the page that quotes the newest site table
README_START = "<!-- bench:site:start -->"
README_END = "<!-- bench:site:end -->"

BUYERS = 300
GENERATED_BOOKS = 20_000
# Class C boxes the data set never takes: the distinct-slot POST row books among these.
FREE_BOX_FIRST = 51
FREE_BOX_COUNT = 50
# Logged-in buyers the POST rows rotate over.
POSTING_BUYERS = 32


def log(message: str) -> None:
    """Progress on stderr, so stdout carries only the table."""
    print(f"[bench] {message}", file=sys.stderr, flush=True)
