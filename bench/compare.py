"""`make bench` (`python -m bench.compare`): a baseline commit and this tree, side by side.

The baseline (`--base`, default the BENCH_BASE environment variable, else `main`) is exported
with `git archive` into a temporary directory; each tree serves its own site on its own embedded
store loaded with the same data set (bench/compare_side.py, run in that tree), both at once.
Each row is then driven with wrk (bench/wrk/site.lua, as `python -m bench.site` drives it)
against the baseline and this tree alternately, A B A B A B (`--rounds`), a warm-up before each
measured run; a row shows, for each side, the round with the median requests/s, its p50 and p99,
and this tree's requests/s as a multiple of the baseline's. Rows: the signed-in base template
(reference), the booking page, the calendar fragment, both POST rows (distinct free slots;
8 buyers racing per slot), the class C map and the account page.

Prints one Markdown table, writes it to bench/results/<date>-<HHMM>-compare.md and quotes it in
docs/performance.md (between the `bench:compare` markers). The full single-tree benchmark with
in-memory twins and CPU shares is `python -m bench.site`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import IO, Any

from bench.site_common import RESULTS_DIR, ROOT, log
from bench.site_report import answers, machine
from bench.site_rows import Row
from bench.site_wrk import Runner, ensure_wrk, placement

README = ROOT / "docs" / "performance.md"
START, END = "<!-- bench:compare:start -->", "<!-- bench:compare:end -->"
SIDE = ROOT / "bench" / "compare_side.py"


def export_tree(commit: str, into: Path) -> str:
    """The baseline's files (as committed) under `into`; returns the commit's short name."""
    short = subprocess.run(
        ["git", "rev-parse", "--short", commit], cwd=ROOT, check=True, capture_output=True,
        text=True,
    ).stdout.strip()  # fmt: skip
    archive = subprocess.run(
        ["git", "archive", "--format=tar", commit], cwd=ROOT, check=True, capture_output=True
    ).stdout
    with tempfile.TemporaryFile() as tar_file:
        tar_file.write(archive)
        tar_file.seek(0)
        with tarfile.open(fileobj=tar_file) as tar:
            tar.extractall(into, filter="data")
    # The side runner is this tree's: a baseline older than it gets a copy.
    shutil.copy(SIDE, into / "bench" / "compare_side.py")
    return short


def served_model(tree: Path, workers: int, threads: int) -> tuple[int, int]:
    """The gunicorn workers, and threads per worker, that `tree`'s own `make run` serves with
    (its `strongroom.serving` defaults, WEB_CONCURRENCY and WEB_THREADS as set here), where
    `workers` or `threads` is 0. Threads 0: the tree's workers have none (gevent, from
    2026-11-28); an older tree serves gthread workers."""
    code = (
        "from strongroom import serving;"
        "print(serving.default_workers(),"
        " serving.default_threads() if hasattr(serving, 'default_threads') else 0)"
    )
    found = subprocess.run(
        [sys.executable, "-c", code], cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)},
        check=True, capture_output=True, text=True,
    ).stdout.split()  # fmt: skip
    own_workers = int(os.environ.get("WEB_CONCURRENCY", 0)) or int(found[0])
    own_threads = int(found[1])
    return workers or own_workers, (threads or own_threads) if own_threads else 0


class Side:
    """One tree's site, started by bench/compare_side.py in that tree."""

    def __init__(self, name: str, tree: Path, workers: int, threads: int) -> None:
        self.name, self.tree = name, tree
        work = Path(tempfile.mkdtemp(prefix=f"sr-bench-{name}-"))
        self.out = work / "side.json"
        self.log_file: IO[bytes] = open(work / "side.log", "wb")  # noqa: SIM115
        env = {**os.environ, "PYTHONPATH": str(tree)}
        env.pop("REDIS_URL", None)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench.compare_side", str(work / "store"), str(self.out),
             str(workers), str(threads)],
            cwd=tree, env=env, stdin=subprocess.PIPE, stdout=self.log_file,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
        self.work = work
        self.info: dict[str, Any] = {}

    def wait_ready(self, limit: float = 900) -> None:
        deadline = time.monotonic() + limit
        while not self.out.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                tail = (self.work / "side.log").read_text(errors="replace")[-3000:]
                raise RuntimeError(f"the {self.name} side did not start:\n{tail}")
            time.sleep(0.5)
        self.info = json.loads(self.out.read_text(encoding="utf-8"))

    def runner(self, wrk: str, connections: int) -> Runner:
        info = self.info
        identities = {k: [tuple(pair) for pair in v] for k, v in info["identities"].items()}
        return Runner(
            wrk, info["base"], placement(), connections, identities,
            [dt.date.fromisoformat(d) for d in info["days"]], info["rooms"],
            pids=(info["pids"][0], info["pids"][1]),
        )  # fmt: skip

    def rows(self) -> list[Row]:
        return [
            Row(**{**row, "expect": tuple(row["expect"]), "result": {}})
            for row in self.info.get("rows", [])
        ]

    def stop(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log_file.close()
        shutil.rmtree(self.work, ignore_errors=True)


def run_row(runner: Runner, row: Row, warmup: float, seconds: float) -> dict[str, Any]:
    """Preflight, warm-up, measured run; the result (empty when the row cannot run)."""
    try:
        runner.preflight(row)
    except RuntimeError as exc:
        log(str(exc)[:600])
        return {}
    if warmup > 0:
        runner.run(row, warmup)
    runner.settle()
    result = runner.run(row, seconds)
    runner.settle()
    return result


def median_round(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The run with the median requests/s (its own p50 and p99 come with it)."""
    found = [r for r in results if r]
    if not found:
        return {}
    ordered = sorted(found, key=lambda r: r["rps"])
    return ordered[(len(ordered) - 1) // 2]


def table(
    labels: list[str], base: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]],
    base_name: str, new_name: str,
) -> str:  # fmt: skip
    """One Markdown row per page: both sides' req/s, p50, p99, and the ratios."""
    lines = [
        f"| page | req/s {base_name} | req/s {new_name} | ratio | p50 ms {base_name} "
        f"| p50 ms {new_name} | p99 ms {base_name} | p99 ms {new_name} | p99 ratio "
        f"| answers ({new_name}) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for label in labels:
        a, b = base.get(label, {}), new.get(label, {})
        if not a or not b:
            lines.append(f"| {label} | {_rps(a)} | {_rps(b)} | – | | | | | | not measured |")
            continue
        lines.append(
            f"| {label} | {a['rps']:,.0f} | {b['rps']:,.0f} | {b['rps'] / a['rps']:.2f}x "
            f"| {a['p50_us'] / 1000:.1f} | {b['p50_us'] / 1000:.1f} "
            f"| {a['p99_us'] / 1000:.1f} | {b['p99_us'] / 1000:.1f} "
            f"| {b['p99_us'] / max(1, a['p99_us']):.2f} | {answers(b)} |"
        )
    return "\n".join(lines)


def _rps(result: dict[str, Any]) -> str:
    return f"{result['rps']:,.0f}" if result else "–"


def quote(block: str, results: Path) -> bool:
    """Replace the text between docs/performance.md's bench:compare markers."""
    if not README.exists():
        return False
    text = README.read_text(encoding="utf-8")
    start, end = text.find(START), text.find(END)
    if start < 0 or end < start:
        return False
    relative = os.path.relpath(results, README.parent).replace(os.sep, "/")
    quoted = f"{START}\nFrom [{relative}]({relative}):\n\n{block}\n{END}"
    README.write_text(text[:start] + quoted + text[end + len(END) :], encoding="utf-8")
    return True


def served(workers: int, threads: int) -> str:
    """The worker model in words."""
    if threads == 0:
        return f"{workers} gevent workers"
    if threads == 1:
        return f"{workers} sync workers"
    return f"{workers} gthread workers x {threads} threads"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.compare", description=__doc__)
    parser.add_argument("--base", default=os.environ.get("BENCH_BASE") or "main")
    parser.add_argument(
        "--new", default="", help="a commit to measure instead of this tree (exported likewise)"
    )
    parser.add_argument("--seconds", type=float, default=5, help="measured seconds per run")
    parser.add_argument("--warmup", type=float, default=1, help="warm-up seconds per run")
    parser.add_argument("--rounds", type=int, default=3, help="A B rounds per row")
    parser.add_argument(
        "--first-warmup", type=float, default=8,
        help="warm-up seconds before a row's first round (its kept pieces are built then)",
    )  # fmt: skip
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument(
        "--workers", type=int, default=0,
        help="this side's gunicorn workers (default: as its `make run` serves)",
    )  # fmt: skip
    parser.add_argument(
        "--threads", type=int, default=0,
        help="threads per worker, likewise (a tree that serves gthread workers: before 2026-11-28)",
    )  # fmt: skip
    parser.add_argument(
        "--base-workers", type=int, default=0,
        help="the baseline's workers (default: as the baseline's own `make run` serves)",
    )  # fmt: skip
    parser.add_argument("--base-threads", type=int, default=0, help="the baseline's threads")
    parser.add_argument("--only", default="", help="run only rows whose label contains this")
    parser.add_argument("--no-write", action="store_true", help="print only; no results file")
    args = parser.parse_args(argv)

    started = dt.datetime.now().astimezone()
    before = machine()
    wrk = ensure_wrk()
    # booking ids in the POST rows' preflight (bench/site_wrk.py) need the settings module.
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "strongroom.settings")
    os.environ.setdefault("SECRET_KEY", "bench-compare-parent")
    import django

    django.setup()

    exported = Path(tempfile.mkdtemp(prefix="sr-bench-base-"))
    exported_new = Path(tempfile.mkdtemp(prefix="sr-bench-new-"))
    sides: list[Side] = []
    try:
        base_name = export_tree(args.base, exported)
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
            capture_output=True, text=True,
        ).stdout.strip()  # fmt: skip
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        new_name = f"{head}{'+' if dirty else ''}"
        new_tree = ROOT
        if args.new:
            new_name, new_tree = export_tree(args.new, exported_new), exported_new
        # Each side as its own `make run` serves it, unless told otherwise.
        workers, threads = served_model(new_tree, args.workers, args.threads)
        base_workers, base_threads = served_model(exported, args.base_workers, args.base_threads)
        log(f"baseline {args.base} ({base_name}) against this tree ({new_name}); loading both")
        sides = [
            Side("base", exported, base_workers, base_threads),
            Side("new", new_tree, workers, threads),
        ]
        for side in sides:
            side.wait_ready()
        runners = [side.runner(wrk, args.connections) for side in sides]
        rows = [side.rows() for side in sides]
        labels = [r.label for r in rows[1] if args.only.lower() in r.label.lower()]
        found: list[dict[str, dict[str, Any]]] = [{}, {}]
        for label in labels:
            pairs = [next((r for r in side_rows if r.label == label), None) for side_rows in rows]
            runs: list[list[dict[str, Any]]] = [[], []]
            for n in range(max(1, args.rounds)):
                for i in range(2):
                    row = pairs[i]
                    if row is None:
                        continue
                    log(f"{label}: round {n + 1}, {sides[i].name}")
                    # A row's first round warms its pages' kept pieces in every worker too.
                    warmup = args.warmup if n else max(args.warmup, args.first_warmup)
                    runs[i].append(run_row(runners[i], row, warmup, args.seconds))
            for i in range(2):
                found[i][label] = median_round(runs[i])
            if found[0].get(label) and found[1].get(label):
                ratio = found[1][label]["rps"] / found[0][label]["rps"]
                log(f"{label}: {ratio:.2f}x")
    finally:
        for side in sides:
            side.stop()
        shutil.rmtree(exported, ignore_errors=True)
        shutil.rmtree(exported_new, ignore_errors=True)

    block = table(labels, found[0], found[1], base_name, new_name)
    print(block)
    if args.no_write:
        return 0
    base_served = ""
    if (base_workers, base_threads) != (workers, threads):
        base_served = f"; the baseline {served(base_workers, base_threads)}"
    text = "\n".join([
        f"# Baseline against this tree, {started:%Y-%m-%d %H:%M %Z}",
        "",
        f"`make bench` (`python -m bench.compare`): baseline `{args.base}` ({base_name}) and "
        f"{'commit' if args.new else 'this tree'} ({new_name}, `+`: uncommitted changes), "
        f"each served by gunicorn ({served(workers, threads)}{base_served}, `DEBUG=0`) "
        "on its own embedded store "
        f"with the same data set; wrk with {args.connections} connections, {args.warmup:.0f} s "
        f"warm-up ({args.first_warmup:.0f} s before a row's first round) and "
        f"{args.seconds:.0f} s measured per run, the two sides alternately "
        f"{args.rounds} times; each side's round with the median requests/s.",
        "",
        f"- Machine: {before['cpus']} CPUs ({before['model']}), Python {before['python']}; "
        f"load average before the run {before['load']}.",
        *(
            [
                "- The machine was busy with other work (1-minute load average "
                f"{before['load'].split()[0]} on {before['cpus']} CPUs): the two sides share the "
                "disturbance, but a single round moves with it; compare the ratios, and read "
                "rows the change did not touch as the noise floor."
            ]
            if float(before["load"].split()[0]) > 0.5 * int(before["cpus"])
            else []
        ),
        "",
        block,
        "",
    ])  # fmt: skip
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{started:%Y-%m-%d-%H%M}-compare.md"
    path.write_text(text, encoding="utf-8")
    print(f"\nwritten to {path.relative_to(ROOT)}")
    if quote(block, path):
        print("quoted in docs/performance.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
