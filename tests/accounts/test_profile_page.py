"""The account page's kept parts (accounts/profile.html, `{% fixed %}` with holes): the page
is the same byte for byte whether its parts are kept or rendered on each request, and nothing
of a person, nor a CSRF token, is kept."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
from django.template import Context, Template, TemplateSyntaxError
from django.template.loader import render_to_string
from django.test import Client
from django.utils import translation

from accounts import emails, services
from accounts.emails import EMAIL_MAX_LENGTH
from accounts.forms import EmailForm
from booking.domain.parser import slot_request_parse
from booking.domain.rules import booking_new_id
from booking.engine.claims import booking_claim
from strongroom.keyspace import PERSON
from strongroom.templatetags import fixed_markup
from tests.booking_support import day
from tests.conftest import Someone, person_make

# What differs between two requests of the same page whatever is kept: the CSRF token is
# masked afresh for each request, and so is the nonce of the page's scripts.
_PER_REQUEST = (
    re.compile(r'(name="csrfmiddlewaretoken" value=")[^"]+'),
    re.compile(r'("X-CSRFToken": ")[^"]+'),
    re.compile(r'(nonce=")[^"]+'),
)


def _same_for_any_request(html: str) -> str:
    for pattern in _PER_REQUEST:
        html = pattern.sub(r"\1-", html)
    return html


@pytest.fixture(autouse=True)
def nothing_kept() -> Iterator[None]:
    fixed_markup._fragments.clear()
    yield
    fixed_markup._fragments.clear()


def _book(r: redis.Redis, someone: Someone, *, room: int, n: int, hours: bool) -> None:
    extra = {"hour_start": 9, "hour_end": 11} if hours else {}
    req = slot_request_parse(cls="B" if hours else "A", room=room, dates=[day(n)], **extra)  # type: ignore[arg-type]
    made = booking_claim(
        client=r, owner_id=str(someone.id), request=req, booking_id=booking_new_id(room=room)
    )
    assert made.ok


def _pages(client: Client, language: str) -> list[tuple[str, int, str]]:
    """The account page, then refused posts of both of its forms, in `language`."""
    headers = {"Accept-Language": language}
    refused_email = {"email": "<b>not@@mail", "language": "xx"}
    answers = [
        ("page", client.get("/accounts/me/", headers=headers)),
        ("email", client.post("/accounts/me/email/", refused_email, headers=headers)),
        ("delete", client.post("/accounts/me/delete/", {"password": "wrong <i>"}, headers=headers)),
    ]
    return [(name, a.status_code, _same_for_any_request(a.content.decode())) for name, a in answers]


def test_the_page_is_the_same_kept_or_not_for_several_people_in_both_languages(
    r: redis.Redis,
    buyer: Someone,
    second_buyer: Someone,
    staff: Someone,
    client_for: Callable[[Someone], Client],
    monkeypatch: pytest.MonkeyPatch,
    settings: Any,
) -> None:
    # The wrong password of the delete form is posted 8 times by the first: under the login
    # throttle's usual 5 its last answers would be 429.
    settings.STRONGROOM_LOGIN_FAILURE_LIMIT = 100
    # The first has bookings (with and without hours), an unconfirmed address and a calendar;
    # the second nothing; staff a confirmed address.
    for n in range(3, 16):
        _book(r, buyer, room=10 + n, n=n, hours=n % 2 == 0)
    emails.email_set(client=r, person_id=buyer.id, email="o'neil&co@example.test")
    services.calendar_token_new(client=r, person_id=buyer.id)
    r.hset(
        PERSON.key(person_id=staff.id), mapping={"email": "c@example.test", "email_verified": "1"}
    )
    # Two alike (no address, no bookings): they share every kept part.
    people = [buyer, second_buyer, person_make(r, "third.buyer"), staff, buyer]
    for language in ("en", "zh-hans"):
        kept = [_pages(client_for(someone), language) for someone in people]
        monkeypatch.setattr(fixed_markup, "KEEPING", False)  # every part rendered as it stands
        fresh = [_pages(client_for(someone), language) for someone in people]
        monkeypatch.setattr(fixed_markup, "KEEPING", True)
        assert kept == fresh
        assert [status for _name, status, _html in kept[0]] == [200, 400, 400]
        if language == "en":
            page = kept[0][0][2]
    assert "o&#x27;neil&amp;co@example.test" in page
    assert "room 016" in page and "/book/done/" in page
    assert buyer.username in page and second_buyer.username not in page


def test_a_booking_of_several_days_shows_every_day(
    r: redis.Redis, buyer: Someone, client_for: Callable[[Someone], Client]
) -> None:
    req = slot_request_parse(cls="A", room=30, dates=[day(3), day(4)])
    assert booking_claim(
        client=r, owner_id=str(buyer.id), request=req, booking_id=booking_new_id(room=30)
    ).ok
    page = client_for(buyer).get("/accounts/me/").content.decode()
    assert "room 030 · Dec. 3, 2026, Dec. 4, 2026</li>" in page


def test_nothing_of_a_person_nor_a_token_is_kept(
    r: redis.Redis, buyer: Someone, client_for: Callable[[Someone], Client]
) -> None:
    _book(r, buyer, room=9, n=4, hours=True)
    emails.email_set(client=r, person_id=buyer.id, email="kept@example.test")
    services.calendar_token_new(client=r, person_id=buyer.id)
    client = client_for(buyer)
    page = client.get("/accounts/me/").content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    calendar = re.search(r'class="calendar-url" value="([^"]+)"|value="([^"]+)" aria-label', page)
    assert token and calendar
    kept = "".join(
        piece
        for parts in fixed_markup._fragments.values()
        for piece in parts
        if isinstance(piece, str)
    )
    assert "account-page" in kept  # the page's parts are kept
    for secret in (
        buyer.username,
        "kept@example.test",
        token.group(1),
        calendar.group(2),
        "room 9",
    ):
        assert secret not in kept


@pytest.mark.parametrize("language", ["en", "zh-hans"])
@pytest.mark.parametrize(("email", "mail_language"), [("a&b@example.test", "zh-hans"), ("", "en")])
def test_the_written_email_fields_are_what_django_renders_for_the_form(
    language: str, email: str, mail_language: str
) -> None:
    class Account:
        pass

    account = Account()
    account.email = email  # type: ignore[attr-defined]
    with translation.override(language):
        form = EmailForm(initial={"email": email, "language": mail_language})
        django = "".join(
            render_to_string("accounts/_field.html", {"field": form[name]})
            for name in ("email", "language", "current_password")
        )
        written = render_to_string(
            "accounts/_email_fields.html",
            {
                "account": account,
                "mail_language": mail_language,
                "email_max_length": EMAIL_MAX_LENGTH,
            },
        )
    assert written.strip() == django.strip()


def test_a_hole_in_a_loop_of_a_kept_part_is_refused() -> None:
    template = Template(
        "{% load fixed_markup %}{% fixed 'loop' %}"
        "{% for x in xs %}{% hole x %}{% endfor %}{% endfixed %}"
    )
    with pytest.raises(TemplateSyntaxError):
        template.render(Context({"xs": [1, 2]}))


def test_a_kept_part_fills_its_holes_escaped_on_each_render() -> None:
    template = Template(
        "{% load i18n fixed_markup %}{% fixed 'holes' %}"
        '<p title="{% hole who %}">{% hole who as name %}'
        "{% blocktranslate %}Hello {{ name }}{% endblocktranslate %}</p>"
        "{% csrf_token %}{% endfixed %}"
    )
    first = template.render(Context({"who": "<a>", "csrf_token": "t1"}))
    second = template.render(Context({"who": "Bo", "csrf_token": "NOTPROVIDED"}))
    token = '<input type="hidden" name="csrfmiddlewaretoken" value="t1">'
    assert first == '<p title="&lt;a&gt;">Hello &lt;a&gt;</p>' + token
    assert second == '<p title="Bo">Hello Bo</p>'
