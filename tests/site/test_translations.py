"""Every string the templates mark for translation has a Simplified Chinese translation."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from django.utils import translation
from django.utils.translation.template import templatize

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = sorted([*ROOT.glob("templates/**/*.html"), *ROOT.glob("templates/**/*.txt")])
# What templatize turns {% translate %} / {% blocktranslate %} into.
# templatize writes a string with an apostrophe in double quotes.
LITERAL = r"""u('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")"""
CALL = re.compile(rf"\b(?:gettext|pgettext)\((?:u'[^']*',\s*)?{LITERAL}\)")
PLURAL = re.compile(rf"\bngettext\({LITERAL},\s*{LITERAL}")
# Tag names given as an example in a placeholder are the same in every language.
SAME_IN_BOTH = {"ruby, web"}


def marked_strings(template: Path) -> list[str]:
    """The singular msgids a template marks (plurals: see `marked_plurals`)."""
    code = templatize(template.read_text(encoding="utf-8"), origin=str(template))
    return [ast.literal_eval(literal) for literal in CALL.findall(code)]


def marked_plurals(template: Path) -> list[tuple[str, str]]:
    code = templatize(template.read_text(encoding="utf-8"), origin=str(template))
    return [(ast.literal_eval(a), ast.literal_eval(b)) for a, b in PLURAL.findall(code)]


def test_the_extraction_finds_the_marked_strings() -> None:
    found = marked_strings(ROOT / "templates/strongroom/home.html")
    assert "Treasure classes" in found
    assert any(s.startswith("A building of %(room_count)s rooms.") for s in found)


@pytest.mark.parametrize("template", TEMPLATES, ids=[str(t.relative_to(ROOT)) for t in TEMPLATES])
def test_every_marked_string_speaks_chinese(template: Path) -> None:
    untranslated = []
    with translation.override("zh-hans"):
        for msgid in marked_strings(template):
            wordless = re.fullmatch(r"[\W\d_%()s]*", msgid)
            if not wordless and msgid not in SAME_IN_BOTH and translation.gettext(msgid) == msgid:
                untranslated.append(msgid)
        for singular, plural in marked_plurals(template):
            if translation.ngettext(singular, plural, 2) == plural:
                untranslated.append(plural)
    assert not untranslated, untranslated


SOURCES = sorted(
    path
    for app in ("strongroom", "accounts", "booking", "catalog", "dashboard")
    for path in (ROOT / app).rglob("*.py")
)
GETTEXT_NAMES = {"_", "gettext", "gettext_lazy", "_lazy", "noop"}


def source_strings(path: Path) -> list[str]:
    """String literals passed to gettext (or its lazy twin) in a Python module."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in GETTEXT_NAMES
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.append(node.args[0].value)
    return found


@pytest.mark.parametrize("source", SOURCES, ids=[str(s.relative_to(ROOT)) for s in SOURCES])
def test_every_message_in_the_code_speaks_chinese(source: Path) -> None:
    with translation.override("zh-hans"):
        untranslated = [m for m in source_strings(source) if translation.gettext(m) == m]
    assert not untranslated, untranslated
