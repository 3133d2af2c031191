"""A password's hash does not stop a gevent worker's other requests (strongroom/offload.py): it
runs on a thread of its own, and the event loop goes on meanwhile. Checked in a process
patched as the site's workers are, with work that holds its thread as a hash does (no yield to
gevent); and the login and sign-up paths go through it."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from django.contrib.auth.hashers import check_password, make_password

from strongroom import offload
from strongroom.offload import Busy, off_loop

ROOT = Path(__file__).resolve().parents[2]

_UNDER_GEVENT = """
import json
from gevent import monkey
monkey.patch_all()
import gevent
from strongroom.offload import off_loop

real_sleep = monkey.get_original("time", "sleep")
native_id = monkey.get_original("threading", "get_native_id")
loop_thread = native_id()
ticks = []


def ticker():
    while True:
        ticks.append(1)
        gevent.sleep(0.01)


def work():
    # Holds its thread for 0.5 s without giving gevent a turn, as PBKDF2 does.
    real_sleep(0.5)
    return {"thread": native_id(), "ticks": len(ticks)}


beat = gevent.spawn(ticker)
gevent.sleep(0)
seen = off_loop(work)
beat.kill()
print(json.dumps({**seen, "loop_thread": loop_thread}))
"""


def test_work_off_the_loop_runs_on_another_thread_while_the_loop_goes_on() -> None:
    found = subprocess.run(
        [sys.executable, "-c", _UNDER_GEVENT],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    seen = json.loads(found.stdout.strip().splitlines()[-1])
    assert seen["thread"] != seen["loop_thread"]
    # The loop ticked every 10 ms while the work held its thread: run on the loop itself, the
    # work would have seen the one tick before it.
    assert seen["ticks"] >= 5, seen


def test_outside_gevent_the_work_runs_where_it_is_called() -> None:
    encoded = off_loop(make_password, "correct horse")
    assert off_loop(check_password, "correct horse", encoded)
    assert not off_loop(check_password, "wrong horse", encoded)


def test_every_password_hash_of_the_accounts_goes_off_the_loop() -> None:
    """No call of Django's check_password or make_password in accounts/ but through off_loop."""
    direct = []
    for path in sorted((ROOT / "accounts").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            if node.func.id in {"check_password", "make_password"}:
                direct.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not direct, direct


def test_the_open_lane_refuses_work_beyond_its_limit_and_beyond_one_shares_part() -> None:
    """Work held open (here: nested calls, each waiting for the next) counts against the lane
    until it ends; a refusal runs nothing and leaves nothing counted."""

    def held(depth: int, share: Callable[[int], str]) -> str:
        if depth == 0:
            return "done"
        return off_loop(held, depth - 1, share, open_lane=True, share=share(depth))

    def one_name(_: int) -> str:
        return "bo"

    def many_names(depth: int) -> str:
        return f"name-{depth}"

    with pytest.raises(Busy):
        held(offload.OPEN_LANE_SHARE + 1, one_name)
    assert held(offload.OPEN_LANE_SHARE, one_name) == "done"
    with pytest.raises(Busy):
        held(offload.OPEN_LANE_LIMIT + 1, many_names)
    assert held(offload.OPEN_LANE_LIMIT, many_names) == "done"
    # The trusted lane has no such limit.
    assert off_loop(held, 0, one_name) == "done"
