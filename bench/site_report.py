"""The site benchmark's report: the Markdown table, the machine, the results file and the
README quote."""

from __future__ import annotations

import datetime as dt
import os
import platform
from pathlib import Path
from typing import Any

from bench.site_common import README, README_END, README_START, RESULTS_DIR
from bench.site_rows import RACERS, Row

# --- report --------------------------------------------------------------------------------------


def table(rows: list[Row]) -> str:
    """The one Markdown table: req/s, p50, p99, the share of the signed-in base template, the
    share of the page's in-memory twin (what is left when the store costs nothing) and of its
    render-only twin (when only the template's rendering is left)."""
    bases = [r.result["rps"] for r in rows if r.path == "/bench/base" and r.result]
    base_rps = sum(bases) / len(bases) if bases else 0.0
    lines = [
        "| page | requests/s | p50 ms | p99 ms | vs signed-in base template "
        "| in-memory twin req/s | vs twin | render-only req/s | vs render-only | alone ms "
        "| answers |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        if row.missing:
            lines.append(
                f"| {row.label} | – | – | – | – | – | – | – | – | – | not measured: {row.missing} |"
            )
            continue
        res = row.result
        ratio = "" if row.reference or not base_rps else f"{res['rps'] / base_rps:.0%}"
        floors = []
        for twin in (row.twin, row.render):
            found = twin.result if twin is not None and twin.result else {}
            floors += (
                [f"{found['rps']:,.0f}", f"{res['rps'] / found['rps']:.0%}"] if found else ["", ""]
            )
        lines.append(
            f"| {row.label} | {res['rps']:,.0f} | {res['p50_us'] / 1000:.1f} | "
            f"{res['p99_us'] / 1000:.1f} | {ratio} | {' | '.join(floors)} | "
            f"{row.alone_ms:.1f} | {answers(res)} |"
        )
    return "\n".join(lines)


def cpu_table(rows: list[Row]) -> str:
    """CPU milliseconds a request cost, by who spent them (bench/cpu.py), for each page and its
    in-memory twin: what the store costs the machine beyond its round trips' wait."""
    lines = [
        "| page | served by | workers user | workers sys | store | wrk | other | machine busy "
        "| switches |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        for name, measured in (("page", row), ("in-memory twin", row.twin)):
            cpu = measured.result.get("cpu") if measured is not None and measured.result else None
            if not cpu:
                continue
            store = cpu.get("store_user", 0) + cpu.get("store_sys", 0)
            wrk = cpu.get("wrk_user", 0) + cpu.get("wrk_sys", 0)
            lines.append(
                f"| {row.label} | {name} | {cpu.get('workers_user', 0):.2f} | "
                f"{cpu.get('workers_sys', 0):.2f} | {store:.2f} | {wrk:.2f} | {cpu['other']:.2f} "
                f"| {cpu['busy']:.2f} | {cpu['switches']:.0f} |"
            )
    return "\n".join(lines)


def answers(res: dict[str, Any]) -> str:
    """What the server answered, by status class, and what went wrong."""
    counts = {**res, "s4xx": res["s4xx"] - res["s409"]}
    text = ", ".join(
        f"{counts[key]} {key[1:]}"
        for key in ("s2xx", "s3xx", "s409", "s4xx", "s5xx")
        if counts[key]
    )
    errors = sum(res[key] for key in ("connect", "read", "write"))
    if errors:
        text += f", {errors} socket errors"
    if res["timeout"]:
        text += f", {res['timeout']} timed out (over 10 s, not in p50/p99)"
    if res.get("note"):
        text += f"; {res['note']}"
    return text


def claim_note(row: Row, warm: dict[str, Any] | None, made: int, connections: int) -> str:
    """Bookings stored against confirmations seen (and, for the race, slots asked): requests
    in flight when wrk stops are still served, at most one per connection per run."""
    runs = [r for r in (warm, row.result) if r]
    wins = sum(r["s3xx"] for r in runs)
    late = made - wins
    ok = 0 <= late <= 2 * connections
    note = f"{made} bookings stored for {wins} confirmations seen (+{late} after wrk stopped)"
    if row.slots == "race":
        # One booking per slot is the claim function's promise (checked by the tests); here the
        # answers: every eighth request wins, the other seven are refused.
        slots = sum(-(-r["requests"] // RACERS) for r in runs)
        refused = sum(r["s409"] for r in runs)
        note = (
            f"{RACERS} buyers per fresh slot, about {slots} slots: {wins} won, {refused} "
            f"refused; " + note
        )
    return ("" if ok else "MISMATCH: ") + note


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
    path = RESULTS_DIR / f"{when:%Y-%m-%d-%H%M}.md"  # never over an earlier run's file
    path.write_text(text, encoding="utf-8")
    return path


def quote_in_readme(block: str, results: Path) -> bool:
    """Replace the text between docs/performance.md's bench:site markers with the newest table."""
    if not README.exists():
        return False
    text = README.read_text(encoding="utf-8")
    start, end = text.find(README_START), text.find(README_END)
    if start < 0 or end < start:
        return False
    relative = os.path.relpath(results, README.parent).replace(os.sep, "/")
    quoted = f"{README_START}\nFrom [{relative}]({relative}):\n\n{block}\n{README_END}"
    README.write_text(text[:start] + quoted + text[end + len(README_END) :], encoding="utf-8")
    return True
