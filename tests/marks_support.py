"""The markers tests/conftest.py sets from what a test and its fixtures do.

`slow`: the test starts processes of its own (gunicorn, an embedded server or a cluster, Redis
7.0, a browser, any subprocess), itself or through a fixture. The session's store, which every
test uses, does not count. `make check` leaves these out.

`store`: the test uses the session's store in this process (it asks for `r`, `client` or a
fixture built on them, or makes a Django test Client or calls strongroom.store itself). The
cluster pass of `make test` runs the store tests that are not slow on a 3-primary cluster.

The code is read, not run: the names a test, its fixtures and the tests' helper functions load
are looked up where they would find them. What the reading misses for `slow`, a watch at run
time reports (`ProcessWatch`).
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

import django.test
import pytest

from strongroom import embedded, embedded_cluster, serving, static_files, store

# The session's store: every test has it (the autouse `r`), so starting it is no one's cost.
SHARED_FIXTURES = frozenset({"store_dir"})

STARTERS: frozenset[object] = frozenset(
    {
        subprocess.Popen,
        subprocess.run,
        subprocess.call,
        subprocess.check_call,
        subprocess.check_output,
        embedded.ensure_running,
        embedded_cluster.cluster_start,
        embedded_cluster.LocalCluster.restart,
        serving.start_site,
        static_files.static_collect,
    }
)
# Playwright starts its driver and the browser (its module is imported only when a test runs).
STARTER_MODULES = ("playwright",)

# Asking for one of these (directly or through other fixtures) uses the session's store; `r` is
# autouse, so only asking for it by name counts. `client` is pytest-django's test client.
STORE_FIXTURES = frozenset({"r", "store_dir", "client"})
STORE_USERS: frozenset[object] = frozenset({django.test.Client, store, store.get_store})

_MISSING = object()


class _StarterModule:
    """A module of STARTER_MODULES, named by an import but not imported."""


def is_starter(obj: object) -> bool:
    if isinstance(obj, _StarterModule):
        return True
    module = getattr(obj, "__module__", None)
    if isinstance(module, str) and module.split(".")[0] in STARTER_MODULES:
        return True
    return _member(obj, STARTERS)


def is_store_user(obj: object) -> bool:
    return _member(obj, STORE_USERS)


def _member(obj: object, found: frozenset[object]) -> bool:
    try:
        return obj in found
    except TypeError:  # unhashable
        return False


def _of_the_tests(obj: object) -> bool:
    module = getattr(obj, "__module__", None)
    return isinstance(module, str) and module.split(".")[0] == "tests"


_known: dict[tuple[Callable[[object], bool], types.CodeType], bool] = {}


def reaches(func: Callable[..., Any], target: Callable[[object], bool]) -> bool:
    """True when `func` (a test, a fixture or a helper) may load something `target` accepts."""
    func = inspect.unwrap(getattr(func, "__func__", func))
    code = getattr(func, "__code__", None)
    if code is None:
        return False
    return _code_reaches(code, getattr(func, "__globals__", {}), target)


def starts_processes(func: Callable[..., Any]) -> bool:
    return reaches(func, is_starter)


def _code_reaches(
    code: types.CodeType, globals_: dict[str, Any], target: Callable[[object], bool]
) -> bool:
    if (target, code) in _known:
        return _known[target, code]
    _known[target, code] = False  # a helper that calls itself
    found = any(_through(obj, target) for obj in _referenced(code, globals_)) or any(
        _code_reaches(const, globals_, target)
        for const in code.co_consts
        if isinstance(const, types.CodeType)
    )
    _known[target, code] = found
    return found


def _through(obj: object, target: Callable[[object], bool]) -> bool:
    if target(obj):
        return True
    if not _of_the_tests(obj):
        return False
    if isinstance(obj, types.FunctionType):
        return reaches(obj, target)
    if isinstance(obj, type):
        return any(
            reaches(member, target)
            for member in vars(obj).values()
            if isinstance(member, types.FunctionType)
        )
    return False


def _referenced(code: types.CodeType, globals_: dict[str, Any]) -> Iterator[object]:
    """What `code` may load by name: its globals, the modules it imports (already imported
    elsewhere: importing has effects of its own), and each of its names looked up on those
    modules and classes (`subprocess.run`, `from tests.conftest import serve_site`). A name
    may be paired with the wrong module: that errs towards a marker."""
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


def _definition(item: pytest.Item, name: str) -> Any:
    """The fixture definition `name` resolves to for `item` (None if it is no fixture)."""
    definitions = item._fixtureinfo.name2fixturedefs.get(name)  # type: ignore[attr-defined]
    return definitions[-1] if definitions else None


def _asked_for(item: pytest.Item) -> set[str]:
    """The fixtures `item` asks for by name, and those they ask for, down to the last; a name
    a fixture passes to `request.getfixturevalue` counts. Autouse fixtures alone do not."""
    wanted = list(item._fixtureinfo.argnames)  # type: ignore[attr-defined]
    for mark in item.iter_markers("usefixtures"):
        wanted.extend(mark.args)
    seen: set[str] = set()
    while wanted:
        name = wanted.pop()
        definition = _definition(item, name)
        if name in seen or definition is None:
            continue
        seen.add(name)
        wanted.extend(definition.argnames)
        code = getattr(inspect.unwrap(definition.func), "__code__", None)
        if code is not None and "getfixturevalue" in code.co_names:
            wanted.extend(c for c in code.co_consts if isinstance(c, str) and c.isidentifier())
    return seen


def slow(item: pytest.Item) -> bool:
    """Whether `item` starts processes, itself or through any fixture it uses."""
    function = getattr(item, "function", None)
    if function is not None and starts_processes(function):
        return True
    for name in item.fixturenames:  # type: ignore[attr-defined]
        definition = _definition(item, name)
        if name not in SHARED_FIXTURES and definition and starts_processes(definition.func):
            return True
    return False


def uses_store(item: pytest.Item) -> bool:
    """Whether `item` uses the session's store in this process."""
    asked = _asked_for(item)
    if asked & STORE_FIXTURES:
        return True
    function = getattr(item, "function", None)
    functions = [function] if function is not None else []
    functions += [_definition(item, name).func for name in asked]
    return any(reaches(f, is_store_user) for f in functions)


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


# How much of a worker a test takes, roughly: the order `heavy_files_first` sorts by.
_WEIGHTS = (("long", 100.0), ("browser", 5.0), ("slow", 3.0), ("sweep", 0.5))


def heavy_files_first(items: list[pytest.Item]) -> None:
    """Sort `items` so that the heaviest test files come first, each file's tests kept in their
    order: files with a `long` test (25 s or more, marked by hand), then by the weight of their
    browser, slow and sweep tests. `--dist loadfile` hands the files out in this order, so the
    longest ones start at once instead of leaving one worker running alone at the end."""
    weight: dict[str, float] = {}
    for item in items:
        file = item.nodeid.partition("::")[0]
        mark = next((w for name, w in _WEIGHTS if item.get_closest_marker(name)), 0.05)
        weight[file] = weight.get(file, 0.0) + mark
    # A stable sort: files of equal weight, and each file's tests, keep their order.
    items.sort(key=lambda item: -weight[item.nodeid.partition("::")[0]])
