"""docs/architecture.md cannot drift from the code: every module it names exists (and every
dotted name it gives, down to the function), and every module of the apps is named there, so a
module renamed, added or removed without the map fails here."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

from strongroom import keyspace as ks

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
APPS = ("strongroom", "accounts", "booking", "catalog", "dashboard", "bench")
# Files every Django app has, named by the doc as a group or not at all.
UNNAMED = {"__init__.py", "apps.py"}


def named_files(text: str) -> set[str]:
    """The files the doc names, as paths from the root: `x.py` (or `lua/...`) under the package
    of the section it sits in (a `### app/` heading, or a line that starts with `app/part/`)."""
    found: set[str] = set()
    package = ""
    for line in text.splitlines():
        heading = re.match(r"### (\w+)/", line) or re.match(r"`(\w+/\w+)/`", line)
        if heading:
            package = heading.group(1)
        if line.startswith("## ") and not line.startswith("## Modules"):
            package = ""
        for token in re.findall(r"`([\w/.-]+\.(?:py|lua|txt))`", line):
            if re.match(
                r"(tests|docs|strongroom|accounts|booking|catalog|dashboard|bench)/", token
            ):
                found.add(token)
            elif package:
                found.add(f"{package}/{token}")
    return found


def dotted_names(text: str) -> set[str]:
    """The `app.module.name` references of the doc (booking.web.pick.booking_pick...)."""
    apps = "|".join(APPS[:-1])
    found = re.findall(rf"`((?:{apps})\.[\w.]+)`", text)
    return {name for name in found if not name.endswith((".py", ".lua", ".txt"))}


def app_modules() -> set[str]:
    """Every module of the apps and the benchmark, as a path from the root (migrations,
    management commands and template tags are Django's own places)."""
    return {
        str(path.relative_to(ROOT))
        for app in APPS
        for path in (ROOT / app).rglob("*.py")
        if path.name not in UNNAMED and not {"management", "templatetags"} & set(path.parts)
    }


def missing_files(text: str) -> list[str]:
    return sorted(name for name in named_files(text) if not (ROOT / name).exists())


def unresolved(text: str) -> list[str]:
    wrong = []
    for dotted in sorted(dotted_names(text)):
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                target: object = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            module = ".".join(parts[:cut])
            try:
                for attribute in parts[cut:]:
                    target = getattr(target, attribute)
            except AttributeError:
                wrong.append(dotted)
                break
            # A function or class is named where it is made, not where it is imported.
            home = getattr(target, "__module__", module) if cut < len(parts) else module
            if cut == len(parts) - 1 and home != module:
                wrong.append(f"{dotted} (made in {home})")
            break
        else:
            wrong.append(dotted)
    return wrong


def unnamed(text: str) -> list[str]:
    named = named_files(text)
    return sorted(module for module in app_modules() if module not in named)


def test_every_module_and_name_the_map_gives_exists() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert missing_files(text) == []
    assert unresolved(text) == []


def test_every_module_of_the_apps_is_on_the_map() -> None:
    assert unnamed(DOC.read_text(encoding="utf-8")) == []


def test_a_module_renamed_without_the_map_is_noticed() -> None:
    text = DOC.read_text(encoding="utf-8")
    # The map still says `claims.py` and `booking.engine.claims.booking_claim`: as if the code
    # had renamed the module, the names no longer exist...
    renamed = text.replace("`claims.py`", "`claiming.py`").replace(
        "booking.engine.claims.", "booking.engine.claiming."
    )
    assert "booking/engine/claiming.py" in missing_files(renamed)
    assert any(name.startswith("booking.engine.claiming.") for name in unresolved(renamed))
    # ...and the module the code has is no longer on the map.
    assert "booking/engine/claims.py" in unnamed(renamed)


README = ROOT / "booking" / "README.md"


def family_mismatches(text: str) -> list[str]:
    """Where booking/README.md's key table differs from strongroom/keyspace/: a family named
    twice, unknown, shaped or typed otherwise, or one of booking's families left out."""
    rows = re.findall(r"^\| ([a-z0-9-]+) \| `([^`]+)` \| ([^|]+) \|", text, re.M)
    wrong = [
        f"{name} twice" for name in {r[0] for r in rows} if [r[0] for r in rows].count(name) > 1
    ]
    for name, key, kind in rows:
        family = ks.FAMILIES.get(name)
        if family is None:
            wrong.append(f"{name}: no such family")
            continue
        shape = re.sub(
            r"<[^>]*>", ".+", re.escape(family.pattern).replace(r"\<", "<").replace(r"\>", ">")
        )
        if not re.fullmatch(shape, key) or kind.split()[0] != family.type:
            wrong.append(f"{name}: {key} {kind.strip()}, declared {family.pattern} {family.type}")
    listed = {r[0] for r in rows}
    wrong += [
        f"{n} missing" for n, f in ks.FAMILIES.items() if f.app == "booking" and n not in listed
    ]
    return sorted(wrong)


def test_the_booking_key_families_are_those_of_the_keyspace() -> None:
    assert family_mismatches(README.read_text(encoding="utf-8")) == []


def test_a_key_family_the_readme_gets_wrong_is_noticed() -> None:
    text = README.read_text(encoding="utf-8")
    row = "| booking-refs | `{room:007}:refs` | hash |"
    assert row in text
    assert family_mismatches(text.replace(row, "| booking-refs | `{room:007}:references` | hash |"))
    assert family_mismatches(text.replace(row + " short reference -> booking id |\n", ""))
    doubled = text.replace(row, row + " x |\n" + row)
    assert "booking-refs twice" in family_mismatches(doubled)
