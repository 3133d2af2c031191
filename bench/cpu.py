"""Where a run's CPU went: the gunicorn workers, the store, the load generator and the rest
(the kernel's own threads: the file system's journal, network softirqs), read from /proc
before and after the run. Divided by the requests served, it says what a request costs the
machine, which requests/s alone cannot: two rows at the same rate may cost different CPU."""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass, field
from pathlib import Path

_TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")


@dataclass
class Snapshot:
    """CPU ticks so far: the machine's busy time, and user/system time by process group."""

    busy: int = 0
    switches: int = 0
    groups: dict[str, tuple[int, int]] = field(default_factory=dict)


def _machine() -> tuple[int, int]:
    busy = switches = 0
    for line in Path("/proc/stat").read_text().splitlines():
        words = line.split()
        if words[0] == "cpu":
            # user nice system idle iowait irq softirq steal: all but idle and iowait
            ticks = [int(w) for w in words[1:9]]
            busy = sum(ticks) - ticks[3] - ticks[4]
        elif words[0] == "ctxt":
            switches = int(words[1])
    return busy, switches


def _group(pid: int, parent: int, server_pid: int, store_pid: int) -> str:
    if pid == store_pid:
        return "store"
    if pid == server_pid or parent == server_pid:
        return "workers"
    return ""


def snapshot(server_pid: int, store_pid: int) -> Snapshot:
    """The machine's counters now, with the workers (gunicorn's master and children), the
    store's process and this process's waited-for children (wrk) summed apart."""
    busy, switches = _machine()
    found = Snapshot(busy=busy, switches=switches)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    ticks = 1000 / _TICK_MS
    found.groups["wrk"] = (round(children.ru_utime * ticks), round(children.ru_stime * ticks))
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text()
        except OSError:
            continue  # gone meanwhile
        rest = text[text.rindex(")") + 2 :].split()  # the fields after the command's name
        group = _group(int(entry.name), int(rest[1]), server_pid, store_pid)
        if group:
            user, system = found.groups.get(group, (0, 0))
            found.groups[group] = (user + int(rest[11]), system + int(rest[12]))
    return found


def per_request(before: Snapshot, after: Snapshot, requests: int) -> dict[str, float]:
    """CPU ms per request by group (user and system apart), the rest of the machine's busy
    time ("other": the kernel's threads, other programs) and context switches per request."""
    if requests <= 0:
        return {}
    costs: dict[str, float] = {}
    known = 0
    for group, (user, system) in after.groups.items():
        was_user, was_system = before.groups.get(group, (0, 0))
        used_user, used_system = max(0, user - was_user), max(0, system - was_system)
        costs[f"{group}_user"] = used_user * _TICK_MS / requests
        costs[f"{group}_sys"] = used_system * _TICK_MS / requests
        known += used_user + used_system
    costs["other"] = max(0, after.busy - before.busy - known) * _TICK_MS / requests
    costs["busy"] = (after.busy - before.busy) * _TICK_MS / requests
    costs["switches"] = (after.switches - before.switches) / requests
    return costs
