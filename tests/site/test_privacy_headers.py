"""Pages that may show a pickup code or personal data are never kept by a cache, and every
response denies the browser features the site does not use."""

from __future__ import annotations

import re
from typing import Any

import redis
from django.test import Client

from strongroom.headers import PERMISSIONS_POLICY

B_8_12 = {"cls": "B", "room": "7", "start": "8", "end": "12", "date": "2026-12-08"}


def hidden(page: str, name: str) -> str:
    match = re.search(rf'name="{name}" value="([^"]+)"', page)
    assert match, f"no hidden {name}"
    return match.group(1)


def test_every_response_carries_a_permissions_policy(r: redis.Redis) -> None:
    visitor = Client()
    for path in ("/", "/catalog/", "/healthz", "/no-such-page/", "/accounts/login/"):
        response = visitor.get(path)
        assert response["Permissions-Policy"] == PERMISSIONS_POLICY, path
    assert "camera=()" in PERMISSIONS_POLICY and "geolocation=()" in PERMISSIONS_POLICY


def test_the_page_with_the_pickup_code_and_every_signed_in_page_is_private(
    r: redis.Redis, client_for: Any, buyer: Any, staff: Any
) -> None:
    shopper = client_for(buyer)
    held = shopper.post("/book/hold/", B_8_12)
    assert held["Cache-Control"] == "private, no-store"
    confirm = shopper.get(held["Location"])
    form = {
        **B_8_12,
        "booking_id": hidden(confirm.content.decode(), "booking_id"),
        "hold_id": hidden(confirm.content.decode(), "hold_id"),
    }
    done = shopper.post("/book/claim/", form)
    code_page = shopper.get(done["Location"])
    assert 'id="pickup-code"' in code_page.content.decode()
    pages = [confirm, code_page]
    pages += [shopper.get(path) for path in ("/", "/book/mine/", "/accounts/me/", "/catalog/")]
    pages += [client_for(staff).get(path) for path in ("/staff/", "/staff/people/")]
    for page in pages:
        assert page.status_code == 200
        assert page["Cache-Control"] == "private, no-store", page.wsgi_request.path


def test_a_login_answer_is_private_but_an_anonymous_page_is_not(r: redis.Redis) -> None:
    visitor = Client()
    assert "no-store" not in visitor.get("/catalog/").get("Cache-Control", "")
    answer = visitor.post("/accounts/login/", {"username": "nobody", "password": "wrong"})
    assert answer["Cache-Control"] == "private, no-store"
