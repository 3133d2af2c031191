"""Compressed HTML without a BREACH-style leak (strongroom/compression.py): only answers that
carry no secret beyond the per-response masked CSRF token are compressed."""

from __future__ import annotations

import gzip
import re
from collections.abc import Iterator
from typing import Any

import brotli  # type: ignore[import-untyped]  # no stubs; whitenoise[brotli] installs it
import pytest
import redis
import time_machine
from django.middleware import csrf
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from booking.domain.codes import code_display
from tests.booking_support import NOW, claim, day, request

PROBE = "zzprobe"  # reflected input an attacker would vary
BOTH = "gzip, deflate, br"

# The views whose answers may be compressed: each carries no pickup code, token or private
# address. A view added here must be checked for secrets first.
COMPRESSIBLE = {"booking:find", "booking:find_results", "booking:calendar", "catalog:browse"}


@pytest.fixture(autouse=True)
def frozen() -> Iterator[None]:
    with time_machine.travel(NOW, tick=False):
        yield


def body(response: Any) -> str:
    encoding = response.get("Content-Encoding", "")
    raw = response.content
    if encoding == "br":
        raw = brotli.decompress(raw)
    elif encoding == "gzip":
        raw = gzip.decompress(raw)
    return str(raw.decode())


def map_url() -> str:
    return reverse("booking:find") + f"?cls=C&date={day(8).isoformat()}&start=10&end=12&q={PROBE}"


def test_the_map_and_the_catalog_are_compressed_with_the_input_they_reflect(
    client_for: Any, buyer: Any
) -> None:
    client = client_for(buyer)
    page = client.get(map_url(), HTTP_ACCEPT_ENCODING=BOTH)
    assert page.status_code == 200 and page["Content-Encoding"] == "br"
    assert "Accept-Encoding" in page["Vary"]
    assert "csrfmiddlewaretoken" in body(page) and int(page["Content-Length"]) == len(page.content)
    books = client.get(reverse("catalog:browse") + f"?all={PROBE}", HTTP_ACCEPT_ENCODING="gzip")
    assert books["Content-Encoding"] == "gzip" and PROBE in body(books)
    plain = client.get(map_url())
    assert not plain.has_header("Content-Encoding") and body(plain).startswith("<!DOCTYPE")


def test_a_page_with_a_pickup_code_and_reflected_input_is_never_compressed(
    r: redis.Redis, client_for: Any, buyer: Any
) -> None:
    booking = claim(r, request("A", dates=(8,)), owner=str(buyer.id)).booking
    assert booking is not None
    client = client_for(buyer)
    done = client.get(
        reverse("booking:done", kwargs={"booking_id": booking.id}) + f"?next={PROBE}",
        HTTP_ACCEPT_ENCODING=BOTH,
    )
    assert done.status_code == 200 and code_display(booking.pickup_code()) in body(done)
    assert not done.has_header("Content-Encoding")
    mine = client.get(reverse("booking:mine") + f"?q={PROBE}", HTTP_ACCEPT_ENCODING=BOTH)
    assert mine.status_code == 200 and not mine.has_header("Content-Encoding")


def test_a_reset_link_page_with_its_token_in_the_form_is_never_compressed(
    client_for: Any, buyer: Any
) -> None:
    url = reverse("accounts:reset_confirm", kwargs={"person_id": buyer.id, "token": PROBE * 3})
    page = client_for(buyer).get(url, HTTP_ACCEPT_ENCODING=BOTH)
    assert page.status_code < 500 and not page.has_header("Content-Encoding")


def test_the_csrf_token_of_a_compressed_page_is_masked_afresh_on_every_answer(
    client_for: Any, buyer: Any
) -> None:
    client = client_for(buyer)
    tokens = [
        re.findall(r'name="csrfmiddlewaretoken" value="([^"]+)"', body(client.get(map_url())))
        for _ in range(2)
    ]
    first, second = tokens
    assert first and second and first[0] != second[0]
    unmask = csrf._unmask_cipher_token  # type: ignore[attr-defined]
    secrets = {unmask(token) for token in first + second}
    assert len(secrets) == 1  # one secret, never twice the same bytes on the wire


def test_only_the_reviewed_views_are_marked_compressible() -> None:
    marked = set()

    def walk(patterns: list[Any], namespace: str) -> None:
        for entry in patterns:
            if isinstance(entry, URLResolver):
                walk(entry.url_patterns, entry.namespace or namespace)
            elif isinstance(entry, URLPattern) and getattr(entry.callback, "compressible", False):
                marked.add(f"{namespace}:{entry.name}")

    walk(get_resolver().url_patterns, "")
    assert marked == COMPRESSIBLE
