"""The README is for a user and an operator (issue 33, point 18): every setting the site reads
from its environment is in its settings table, by its full name; it stays short, the internals
live in docs/."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.conftest import ROOT

README = ROOT / "README.md"
# Where the site may read its environment: settings.py above all, and any module of the product
# (serving.py and the serve command read BIND and WEB_CONCURRENCY).
SOURCES = sorted(
    path
    for app in ("strongroom", "accounts", "booking", "catalog", "dashboard")
    for path in (ROOT / app).rglob("*.py")
)
READERS = re.compile(r"env_\w+")


def variables_read(path: Path) -> set[str]:
    """Names passed as a literal to an env_* reader or os.environ.get / os.getenv."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Call) and node.args):
            continue
        first = node.args[0]
        if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
            continue
        func = node.func
        name = (
            func.id
            if isinstance(func, ast.Name)
            else func.attr
            if isinstance(func, ast.Attribute)
            else ""
        )
        if READERS.fullmatch(name) or name in ("getenv",) or (
            name == "get" and isinstance(func, ast.Attribute) and "environ" in ast.unparse(func)
        ):  # fmt: skip
            found.add(first.value)
    return found


def table_names(text: str) -> set[str]:
    """The variables named in the first column of the README's tables (`NAME`)."""
    names = set()
    for line in text.splitlines():
        if line.startswith("| `"):
            first_cell = line.split("|")[1]
            names.update(re.findall(r"`([A-Z][A-Z0-9_]+)`", first_cell))
    return names


def test_the_reader_finds_the_settings_it_must() -> None:
    read = variables_read(ROOT / "strongroom" / "settings.py")
    assert {"REDIS_URL", "STRONGROOM_HOLD_SECONDS", "STRONGROOM_AUDIT_MAXLEN"} <= read
    assert len(read) >= 40


def test_every_setting_read_is_in_the_readme_settings_table() -> None:
    read = set().union(*(variables_read(path) for path in SOURCES))
    missing = sorted(read - table_names(README.read_text(encoding="utf-8")))
    assert not missing, f"not in README.md's settings table: {missing}"


def test_the_readme_is_a_short_tour_with_the_internals_in_docs() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.encode()) < 30_000
    assert "## A short tour" in text
    for doc in re.findall(r"\]\((docs/[^)#]+)", text):
        assert (ROOT / doc).exists(), doc
