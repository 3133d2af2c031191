"""The Lua of the function libraries: each installed app's `lua/` folder, read as the text that
`strongroom.store.load_functions` loads (and the tests read to compare with the Python side)."""

from __future__ import annotations

from pathlib import Path

from django.apps import apps


def library_text(source: Path) -> str:
    """One function library's text: a `.lua` file as it is, or a folder of files joined in the
    order its `library.txt` lists them (one file per function family)."""
    if source.is_file():
        return source.read_text()
    names = [
        line.strip()
        for line in (source / "library.txt").read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    return "\n".join((source / name).read_text() for name in names)


def function_sources() -> list[Path]:
    """Every function library of the installed apps, in app order: `<app>/lua/<name>.lua`, or a
    folder `<app>/lua/<name>/` whose `library.txt` lists its files."""
    sources: list[Path] = []
    for app in apps.get_app_configs():
        lua = Path(app.path) / "lua"
        sources.extend(sorted(lua.glob("*.lua")))
        sources.extend(sorted(path.parent for path in lua.glob("*/library.txt")))
    return sources
