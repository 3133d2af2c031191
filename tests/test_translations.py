"""Every string the templates mark for translation has a Simplified Chinese translation."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from django.utils import translation
from django.utils.translation.template import templatize

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = sorted(ROOT.glob("templates/**/*.html"))
# What templatize turns {% translate %} / {% blocktranslate %} into.
LITERAL = r"u('(?:[^'\\]|\\.)*')"
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
