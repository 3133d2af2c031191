"""The markers tests/conftest.py sets (tests/marks_support.py): `slow` on a test that starts
processes of its own, `store` on one that uses the session's store in-process; and the watch
that fails an unmarked test which starts a process anyway."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import redis
from django.test import Client

from tests import marks_support
from tests.conftest import serve_site, site_env


def _runs_a_command() -> None:
    subprocess.run(["true"], check=True)


def _serves_the_site() -> None:
    serve_site(site_env("unix:///nowhere", Path("/nowhere")))


def _through_another_helper() -> None:
    _serves_the_site()


def _imports_the_starter_inside() -> None:
    from strongroom.serving import start_site

    start_site({}, workers=1)


def _only_counts() -> int:
    return sum(range(3))


def _makes_a_client() -> int:
    return Client().get("/healthz").status_code


# Looked up by name, so that the tests below do not name (and so reach) the helpers themselves.
HELPERS = {
    helper.__name__: helper
    for helper in (
        _runs_a_command,
        _serves_the_site,
        _through_another_helper,
        _imports_the_starter_inside,
        _only_counts,
        _makes_a_client,
    )
}


@pytest.mark.parametrize(
    ("name", "starts"),
    [
        ("_runs_a_command", True),
        ("_serves_the_site", True),
        ("_through_another_helper", True),
        ("_imports_the_starter_inside", True),
        ("_only_counts", False),
        ("_makes_a_client", False),
    ],
)
def test_the_reading_finds_processes_started_directly_or_through_helpers(
    name: str, starts: bool
) -> None:
    assert marks_support.starts_processes(HELPERS[name]) is starts


def test_the_reading_finds_the_store_used_through_a_django_client() -> None:
    assert marks_support.reaches(HELPERS["_makes_a_client"], marks_support.is_store_user)
    assert not marks_support.reaches(HELPERS["_only_counts"], marks_support.is_store_user)


def test_a_test_asking_for_the_store_is_marked_store_and_not_slow(
    r: redis.Redis, request: pytest.FixtureRequest
) -> None:
    assert request.node.get_closest_marker("store") is not None
    assert request.node.get_closest_marker("slow") is None


def test_a_test_that_only_computes_is_neither(request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker("store") is None
    assert request.node.get_closest_marker("slow") is None


@pytest.mark.parametrize(
    ("fixture", "starts"),
    [("one_server", True), ("live_site", True), ("browser", True), ("r", False), ("buyer", False)],
)
def test_the_fixtures_that_start_processes_are_found(
    fixture: str, starts: bool, request: pytest.FixtureRequest
) -> None:
    """`store_dir` starts the session's store; tests/conftest.py does not count it."""
    found = request._fixturemanager.getfixturedefs(fixture, request.node)
    assert found and marks_support.starts_processes(found[-1].func) is starts
    assert "store_dir" in marks_support.SHARED_FIXTURES


class _Unmarked:
    nodeid = "tests/site/test_x.py::test_y"

    def get_closest_marker(self, name: str) -> None:
        return None


def test_the_watch_fails_an_unmarked_test_that_started_a_process() -> None:
    watch = marks_support.ProcessWatch(item=_Unmarked())  # type: ignore[arg-type]
    watch.hook("subprocess.Popen", ("/bin/true", ["true"], None, None))
    with pytest.raises(pytest.fail.Exception, match="not marked slow"):
        watch.check("its body")


def test_the_watch_lets_the_shared_store_start_and_other_events_pass() -> None:
    watch = marks_support.ProcessWatch(item=_Unmarked())  # type: ignore[arg-type]
    with watch.shared():
        watch.hook("subprocess.Popen", ("/bin/valkey-server", [], None, None))
    watch.hook("open", ("/etc/hosts", "r", 0))
    watch.check("its body")  # nothing noted: no failure


def test_heavy_files_come_first_each_file_whole_and_in_order() -> None:
    from tests.marks_support import heavy_files_first

    class Item:
        def __init__(self, nodeid: str, *marks: str) -> None:
            self.nodeid, self.marks = nodeid, marks

        def get_closest_marker(self, name: str) -> object:
            return name if name in self.marks else None

    items = [
        Item("a.py::one"), Item("a.py::two"),
        Item("b.py::one", "slow"), Item("b.py::two"),
        Item("c.py::one"), Item("c.py::two", "long"),
        Item("d.py::one"), Item("d.py::two"),
    ]  # fmt: skip
    heavy_files_first(items)  # type: ignore[arg-type]
    assert [i.nodeid for i in items] == [
        "c.py::one", "c.py::two", "b.py::one", "b.py::two",
        "a.py::one", "a.py::two", "d.py::one", "d.py::two",
    ]  # fmt: skip
