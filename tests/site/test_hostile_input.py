"""Every URL of the site, as every kind of visitor, with hostile values in every parameter:
a clear answer, never a 500."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
import redis
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from tests.conftest import Someone

# Every route, role and hostile value: `make test` runs it; `make check` leaves it out.
pytestmark = pytest.mark.sweep

HOSTILE = [
    "a:b",
    "{x}",
    "*",
    "with space",
    "new\nline",
    "🦄",
    "x" * 5000,
    "-1",
    "99999999999999999999999",
    "2026-02-30",
    "0",
    "",
    "%00",
    "../../etc/passwd",
]
PARAMS = [
    "cls", "room", "date", "dates", "day", "start", "end", "hour", "hours", "box", "boxes",
    "month", "year", "all", "any", "not", "tag", "tags", "sort", "page", "q", "name", "kind",
    "status", "person", "from", "to", "next", "hold_id", "booking_id", "code", "reason",
    "confirm", "confirmation", "title", "author", "description", "username", "password",
    "password1", "password2", "old_password", "new_password1", "new_password2", "language",
    "staff", "grant", "action", "email", "login", "ref", "entry", "token",
    "hour_start", "hour_end", "move_id", "request_id", "attempt", "letter", "note", "part",
    "rooms", "first", "last", "mode", "days", "closure_id", "cancel_inside", "booking",
    "seen", "was", "free", "open", "move_id",
]  # fmt: skip


def routes() -> Iterator[tuple[str, str]]:
    """(name, path template) of every named URL; <converter:name> left in place."""

    def walk(patterns: list, prefix: str, namespace: str) -> Iterator[tuple[str, str]]:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                yield from walk(
                    pattern.url_patterns, prefix + str(pattern.pattern), pattern.namespace or ""
                )
            elif isinstance(pattern, URLPattern) and pattern.name:
                name = f"{namespace}:{pattern.name}" if namespace else pattern.name
                yield name, "/" + prefix + str(pattern.pattern)

    yield from walk(get_resolver().url_patterns, "", "")


def fill(template: str, value: str) -> str:
    """The path with every <int:...> made a number and every other part a hostile value."""
    import re
    from urllib.parse import quote

    path = re.sub(r"<int:\w+>", "12345", template)
    return re.sub(r"<(?:str:)?\w+>", quote(value, safe="") or "x", path)


ROUTES = sorted(routes())


@pytest.fixture(params=["anonymous", "buyer", "staff"])
def visitor(request: pytest.FixtureRequest, client_for: Callable[[Someone], Client]) -> Client:
    if request.param == "anonymous":
        return Client()
    return client_for(request.getfixturevalue(request.param))


@pytest.mark.parametrize(("name", "template"), ROUTES, ids=[name for name, _ in ROUTES])
def test_hostile_values_never_make_a_server_error(
    name: str, template: str, visitor: Client, r: redis.Redis
) -> None:
    for value in HOSTILE:
        path = fill(template, value)
        params = dict.fromkeys(PARAMS, value)
        for method in (visitor.get, visitor.post):
            response = method(path, params)
            assert response.status_code < 500, (method.__name__, path, value[:40])


@pytest.mark.parametrize(
    "path", ["/", "/healthz", "/catalog/", "/staff/catalog/books/", "/staff/catalog/books/add/"]
)
def test_a_method_a_page_does_not_take_is_refused(
    path: str, client_for: Callable[[Someone], Client], staff: Someone
) -> None:
    browser = client_for(staff)
    for method in ("patch", "delete", "put", "trace"):
        assert getattr(browser, method)(path).status_code == 405, (method, path)
    assert browser.head(path).status_code == 200
    if "add" not in path:
        assert browser.post(path).status_code == 405


# GETs that act (grant a priority hold): a HEAD, which anything may send
# (a link checker, a mail scanner), is refused rather than taken for the person's click.
GET_THAT_ACTS = {"booking:confirm"}


@pytest.mark.parametrize(("name", "template"), ROUTES, ids=[name for name, _ in ROUTES])
def test_a_head_answers_as_the_get_does(
    name: str,
    template: str,
    client_for: Callable[[Someone], Client],
    staff: Someone,
    r: redis.Redis,
) -> None:
    """RFC 9110: HEAD wherever GET works (calendar clients and link checkers probe with it),
    and a HEAD changes nothing, on a real booking's and person's pages too (a HEAD needs no
    CSRF token: one that acted would act for anything that probes a link)."""
    import re

    from booking.engine.bookings import booking_get
    from tests.booking_support import claim, request

    made = claim(r, request("A", 9, (8,)), owner=str(staff.id)).booking
    assert made is not None
    browser = client_for(staff)
    path = re.sub(r"<int:\w+>", str(staff.id), template.replace("<str:booking_id>", made.id))
    path = fill(path, "x")
    rooms = {k: r.dump(k) for k in r.scan_iter(match="sr:{room:*")}
    head = browser.head(path)
    assert {k: r.dump(k) for k in r.scan_iter(match="sr:{room:*")} == rooms, path
    assert booking_get(client=r, booking_id=made.id).status == "confirmed"  # type: ignore[union-attr]
    got = browser.get(path)
    if name in GET_THAT_ACTS:
        assert head.status_code == 405
    else:
        assert head.status_code == got.status_code, (path, got.status_code, head.status_code)


@pytest.mark.parametrize("path", ["/book/hold/", "/book/claim/", "/accounts/logout/"])
def test_a_get_of_a_form_only_address_is_a_page_with_a_way_on(
    r: redis.Redis, path: str, buyer: Someone, client_for: Callable[[Someone], Client]
) -> None:
    answer = client_for(buyer).get(path, HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert answer.status_code == 405 and "POST" in answer["Allow"]
    assert "此地址只接收" in answer.content.decode() and 'href="/book/"' in answer.content.decode()


@pytest.mark.parametrize("path", ["/book/claim/", "/accounts/logout/", "/staff/catalog/books/add/"])
def test_a_method_an_address_does_not_take_is_a_405_before_the_csrf_check(
    r: redis.Redis, path: str
) -> None:
    """A PUT or DELETE sent as a browser sends it (CSRF checked, no token) to an address that
    takes only forms is told the address takes no such request (405, and what it takes), not
    that its token was missing (403)."""
    browser = Client(enforce_csrf_checks=True)
    for method in (browser.put, browser.delete, browser.patch):
        answer = method(path)
        assert answer.status_code == 405, (method.__name__, path, answer.status_code)
        assert answer["Allow"], path
        assert "PUT" not in answer["Allow"] and "DELETE" not in answer["Allow"]
    assert browser.post(path).status_code == 403  # a method it takes: the token still counts


def test_switching_language_after_a_refused_form_returns_to_the_form_s_page(
    r: redis.Redis, buyer: Someone, client_for: Callable[[Someone], Client]
) -> None:
    browser = client_for(buyer)
    page = "/book/?cls=A&room=7"
    answer = browser.post(
        "/book/hold/", {"cls": "Z"}, HTTP_REFERER=f"http://testserver{page}"
    ).content.decode()
    assert f'name="next" type="hidden" value="{page.replace("&", "&amp;")}"' in answer
    # Another site's page is not one to come back to: the booking page of the choice sent (none
    # readable here) is (tests/site/test_language_next.py).
    foreign = browser.post("/book/hold/", {"cls": "Z"}, HTTP_REFERER="http://evil.example/x")
    assert 'name="next" type="hidden" value="/book/"' in foreign.content.decode()


def test_a_foreign_host_gets_400_and_no_traceback_in_the_log(
    r: redis.Redis, capsys: pytest.CaptureFixture[str]
) -> None:
    assert Client(headers={"host": "evil.example"}).get("/").status_code == 400
    # Nothing reaches the console: not the root logger's handler, nor Python's last resort
    # (what a logger without any handler prints to).
    assert "Invalid HTTP_HOST" not in capsys.readouterr().err


@pytest.mark.parametrize(
    "body",
    ["&".join(f"f{i}=1" for i in range(3000)), "notes=" + "x" * 3_000_000],
    ids=["3000-fields", "3-MB"],
)
def test_an_oversized_form_gets_the_site_s_own_400_page_in_the_visitor_s_language(
    r: redis.Redis,
    buyer: Someone,
    client_for: Callable[[Someone], Client],
    body: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    browser = client_for(buyer)
    form = "application/x-www-form-urlencoded"
    answer = browser.post("/book/hold/", body, content_type=form)
    assert answer.status_code == 400 and "nothing was changed" in answer.content.decode()
    chinese = browser.post("/book/hold/", body, content_type=form, HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert chinese.status_code == 400 and '<html lang="zh-hans"' in chinese.content.decode()
    assert "Traceback" not in capsys.readouterr().err  # a refusal, not worth a trace


@pytest.mark.parametrize(
    ("method", "path", "cookie"),
    [
        ("get", "/accounts/verify/x/", ""),
        ("get", "/accounts/verify/x/", "abcdefghijklmnopqrstuvwxyz012345-2"),
        ("post", "/accounts/logout/", ""),
        ("get", "/book/", "abcdefghijklmnopqrstuvwxyz012345-2"),
    ],
)
def test_a_visitor_who_is_not_signed_in_makes_no_session(
    r: redis.Redis, method: str, path: str, cookie: str
) -> None:
    """An invalid link, a logout or a forged cookie shows its message without a session: an
    anonymous client cannot fill the store with sessions."""
    visitor = Client()
    if cookie:
        visitor.cookies["sessionid"] = cookie
    for _ in range(3):
        answer = getattr(visitor, method)(path)
        assert answer.status_code in (200, 302)
    assert [key for key in r.scan_iter("*session*")] == []


MOVE_FIELDS = {"date": "2026-12-05", "hour_start": "9", "hour_end": "11", "boxes": "4", "room": "8"}


@pytest.mark.parametrize("field", list(MOVE_FIELDS))
def test_hostile_values_on_a_real_booking_s_move_form_change_nothing(
    r: redis.Redis,
    field: str,
    buyer: Someone,
    second_buyer: Someone,
    client_for: Callable[[Someone], Client],
) -> None:
    """The id-less routes above stop at "no such booking"; here the booking exists, so every
    value reaches the form's parser (and another buyer's try reaches the owner check)."""
    import time_machine

    from tests.booking_support import NOW, claim, request, snapshot

    with time_machine.travel(NOW, tick=False):
        mine = claim(r, request("C", hour_start=8, hour_end=10, boxes=[3]), owner=str(buyer.id))
        assert mine.booking is not None
        path = f"/book/mine/{mine.booking.id}/move/"
        owner, other = client_for(buyer), client_for(second_buyer)
        before = snapshot(r)
        # Hour 0 is a real hour; no room is the booking's own.
        for value in [v for v in HOSTILE if v != "0" and (v or field != "room")]:
            data = {**MOVE_FIELDS, field: value}
            answer = owner.post(path, data)
            assert answer.status_code in (400, 409), (field, value[:40])
            assert other.post(path, data).status_code == 404
        after = snapshot(r)
        assert {k: v for k, v in after.items() if "session" not in k} == {
            k: v for k, v in before.items() if "session" not in k
        }, "nothing written"


@pytest.mark.parametrize("far", ["0001-01-01", "9999-12-31"])
def test_a_sales_window_in_a_far_year_is_refused_and_every_page_keeps_working(
    r: redis.Redis,
    far: str,
    buyer: Someone,
    staff: Someone,
    client_for: Callable[[Someone], Client],
) -> None:
    """DateField takes any year; a window stored in year 1 or 9999 made /book/ a 500 for all."""
    from booking.engine.window import window_read

    browser = client_for(staff)
    browser.raise_request_exception = False
    answer = browser.post(
        "/staff/window/set/", {"mode": "fixed", "first": far, "last": far, "reason": "x"}
    )
    assert answer.status_code == 400
    assert "Choose a day within ten years of today." in answer.content.decode()
    assert window_read(client=r) is None, "nothing stored"
    for page in ("/book/", "/book/?cls=A&room=7", "/staff/window/"):
        assert browser.get(page).status_code == 200, page
    assert client_for(buyer).get("/book/").status_code == 200
