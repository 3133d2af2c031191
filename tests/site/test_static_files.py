"""Static files are collected again only when their sources changed (strongroom/static_files.py):
a second start on the same directory skips the seconds collectstatic costs, a changed source
file collects again."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from django.contrib.staticfiles.utils import matches_patterns

from strongroom.static_files import STAMP, UNUSED_STATIC, static_collect, static_root


def test_a_second_start_skips_the_collection_and_a_changed_source_collects_again(
    tmp_path: Path, settings: Any
) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "note.txt").write_text("one")
    settings.STATICFILES_DIRS = [*settings.STATICFILES_DIRS, extra]
    env = {**os.environ, "DEBUG": "0", "STRONGROOM_STATIC_DIR": str(tmp_path / "static")}
    assert static_root(env) == (tmp_path / "static").resolve()

    assert static_collect(env) is True
    manifest = tmp_path / "static" / "staticfiles.json"
    assert manifest.exists() and (tmp_path / "static" / STAMP).exists()
    collected = json.loads(manifest.read_text())["paths"]
    # The htmx the pages load and django-htmx's script are collected, its other builds not.
    assert {"django_htmx/htmx-2.min.js", "django_htmx/django-htmx.js"} <= set(collected)
    assert not [path for path in collected if matches_patterns(path, UNUSED_STATIC)]
    collected_at = manifest.stat().st_mtime_ns
    assert static_collect(env) is False
    assert manifest.stat().st_mtime_ns == collected_at

    (extra / "note.txt").write_text("two, longer")
    assert static_collect(env) is True
    assert static_collect({**env, "DEBUG": "1"}) is True  # another storage: collected anew


def test_the_static_directory_follows_the_data_directory_unless_set(tmp_path: Path) -> None:
    assert static_root({"STRONGROOM_DATA_DIR": str(tmp_path)}) == tmp_path.resolve() / "static"
    mine = {"STRONGROOM_DATA_DIR": str(tmp_path), "STRONGROOM_STATIC_DIR": str(tmp_path / "s")}
    assert static_root(mine) == (tmp_path / "s").resolve()
