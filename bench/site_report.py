"""The site benchmark's report: the Markdown table, the machine, the results file and the
README quote."""

from __future__ import annotations

import datetime as dt
import os
import platform
from pathlib import Path

from bench.site_common import README, README_END, README_START, RESULTS_DIR, ROOT
from bench.site_rows import Row

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
