"""Which tests start processes of their own: they get the `slow` marker (tests/conftest.py).

A test starts processes when its own code, or the code of a fixture it uses, reaches one of
STARTERS (gunicorn, an embedded server or a cluster, a browser, any subprocess), directly or
through helper functions of the tests. The code is read, not run: the names each function loads
are looked up where it would find them. The session's shared store (`store_dir`) does not count:
every test uses it. What the reading misses, a watch at run time reports (`ProcessWatch`).
"""

from __future__ import annotations

import contextlib
import inspect
import subprocess
import sys
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from strongroom import embedded, serving

# The fixture every test uses (through the autouse `r`): one store per test session.
SHARED_FIXTURES = frozenset({"store_dir"})

STARTERS: frozenset[object] = frozenset(
    {
        subprocess.Popen,
        subprocess.run,
        subprocess.call,
        subprocess.check_call,
        subprocess.check_output,
        embedded.ensure_running,
        embedded.cluster_start,
        embedded.LocalCluster.restart,
        serving.start_site,
    }
)
# Playwright starts its driver and the browser; its module is imported only when a test runs.
STARTER_MODULES = ("playwright",)

_MISSING = object()
_known: dict[types.CodeType, bool] = {}


class _StarterModule:
    """A module of STARTER_MODULES, named by an import but not imported."""


def is_starter(obj: object) -> bool:
    if isinstance(obj, _StarterModule):
        return True
    try:
        if obj in STARTERS:
            return True
    except TypeError:  # unhashable
        return False
    module = getattr(obj, "__module__", None) or ""
    return isinstance(module, str) and module.split(".")[0] in STARTER_MODULES


def _of_the_tests(obj: object) -> bool:
    return (getattr(obj, "__module__", None) or "").split(".")[0] == "tests"


def starts_processes(func: Callable[..., Any]) -> bool:
    """True when `func` (a test, a fixture or a helper) may start a process."""
    func = inspect.unwrap(getattr(func, "__func__", func))
    code = getattr(func, "__code__", None)
    if code is None:
        return False
    return _code_starts(code, getattr(func, "__globals__", {}))


def _code_starts(code: types.CodeType, globals_: dict[str, Any]) -> bool:
    if code in _known:
        return _known[code]
    _known[code] = False  # a helper that calls itself
    found = any(_reaches_starter(obj) for obj in _referenced(code, globals_)) or any(
        _code_starts(const, globals_)
        for const in code.co_consts
        if isinstance(const, types.CodeType)
    )
    _known[code] = found
    return found


def _reaches_starter(obj: object) -> bool:
    if is_starter(obj):
        return True
    if not _of_the_tests(obj):
        return False
    if isinstance(obj, types.FunctionType):
        return starts_processes(obj)
    if isinstance(obj, type):
        return any(
            starts_processes(member)
            for member in vars(obj).values()
            if isinstance(member, types.FunctionType)
        )
    return False


def _referenced(code: types.CodeType, globals_: dict[str, Any]) -> Iterator[object]:
    """What `code` may load by name: its globals, the modules it imports (already imported
    elsewhere: importing has effects of its own), and each of its names looked up on those
    modules and classes (`subprocess.run`, `from tests.conftest import serve_site`). A name
    may be paired with the wrong module: that errs towards slow."""
    names = code.co_names
    holders = []
    for name in names:
        if name.split(".")[0] in STARTER_MODULES:
            yield _StarterModule()
            continue
        found = globals_.get(name, _MISSING)
        if found is _MISSING:
            found = sys.modules.get(name, _MISSING)
        if found is _MISSING:
            continue
        yield found
        if isinstance(found, types.ModuleType | type):
            holders.append(found)
    for holder in holders:
        for name in names:
            found = getattr(holder, name, _MISSING)
            if found is not _MISSING:
                yield found


def fixtures_starting_processes(item: pytest.Item) -> list[str]:
    """The fixtures `item` uses (all of them, through other fixtures too) that start processes."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return []
    found = []
    for name in item.fixturenames:  # type: ignore[attr-defined]
        definitions = info.name2fixturedefs.get(name)
        if name in SHARED_FIXTURES or not definitions:
            continue
        if starts_processes(definitions[-1].func):
            found.append(name)
    return found


@dataclass
class ProcessWatch:
    """Notes every process a test not marked `slow` starts, through an audit hook (Python
    raises an audit event for every subprocess and fork)."""

    item: pytest.Item | None = None
    shared_depth: int = 0
    started: list[str] = field(default_factory=list)

    EVENTS = frozenset(
        {"subprocess.Popen", "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.system"}
    )

    def hook(self, event: str, args: tuple[Any, ...]) -> None:
        if event not in self.EVENTS or self.item is None or self.shared_depth:
            return
        if self.item.get_closest_marker("slow") is None:
            self.started.append(f"{event} {args[:2]!r}"[:200])

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        """Processes started inside are the session's shared ones (SHARED_FIXTURES)."""
        self.shared_depth += 1
        try:
            yield
        finally:
            self.shared_depth -= 1

    def check(self, when: str) -> None:
        if not self.started:
            return
        started, self.started = self.started, []
        assert self.item is not None
        pytest.fail(
            f"{self.item.nodeid} started a process in {when} but is not marked slow: "
            f"{started[0]}. Use a fixture that starts it (tests/conftest.py finds those) "
            "or mark the test `@pytest.mark.slow`.",
            pytrace=False,
        )
