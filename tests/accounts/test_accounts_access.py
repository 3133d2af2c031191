"""request.user, the access decorators, staff commands, and the demo people."""

from __future__ import annotations

import io

import pytest
import redis
from django.conf import settings
from django.core.management import CommandError, call_command
from django.http import HttpRequest, HttpResponse
from django.test import Client, RequestFactory

from accounts import demo
from accounts.access import login_required, request_person, staff_required
from accounts.middleware import PersonMiddleware
from accounts.people import ANONYMOUS, AnonymousPerson, Person
from accounts.selectors import person_count, person_find, person_get
from accounts.services import PersonNotFound, staff_set
from accounts.sessions import session_person
from strongroom.keyspace import PERSON
from strongroom.sessions import SessionStore
from strongroom.store import round_trips


@login_required
def members_view(request: HttpRequest) -> HttpResponse:
    return HttpResponse(f"hello {request_person(request).username}")


@staff_required
def staff_view(request: HttpRequest) -> HttpResponse:
    return HttpResponse("the staff secret")


def request_as(client: Client, path: str = "/somewhere/?x=1") -> HttpRequest:
    """A request carrying `client`'s session, with request.user set as the middleware would."""
    request = RequestFactory().get(path)
    cookie = client.cookies.get(settings.SESSION_COOKIE_NAME)
    request.session = SessionStore(cookie.value if cookie else None)
    PersonMiddleware(lambda req: HttpResponse())(request)
    return request


def test_people_and_the_anonymous_person():
    person = Person(id=7, username="Anna", is_staff=True)
    assert person.is_authenticated and not person.is_anonymous and person.display_name == "Anna"
    assert not ANONYMOUS.is_authenticated and ANONYMOUS.is_anonymous and not ANONYMOUS.is_staff
    assert ANONYMOUS.id is None and isinstance(ANONYMOUS, AnonymousPerson)


def test_request_user_is_the_person_or_anonymous(r, buyer, staff, client_for):
    assert request_as(Client()).user.is_anonymous
    assert request_as(client_for(buyer)).user == buyer.person
    assert request_person(request_as(client_for(staff))).is_staff


def test_templates_see_request_user(buyer, client_for):
    page = client_for(buyer).get("/")
    assert buyer.username in page.content.decode()
    assert "Log out" in page.content.decode()


def test_login_required_sends_anonymous_visitors_to_login_with_next(buyer, client_for):
    response = members_view(request_as(Client()))
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=%2Fsomewhere%2F%3Fx%3D1"
    assert members_view(request_as(client_for(buyer))).content == b"hello Buyer_Anna"


def test_a_form_sent_after_the_session_ended_returns_to_its_page_after_login_and_says_so(r, buyer):
    """The address a form posts to takes only forms: coming back there after the login would
    be a 405 and the change lost without a word. The login leads back to the page the form
    was on, and says the form was not taken."""
    client = Client()
    client.get("/accounts/login/")
    answer = client.post(
        "/accounts/me/email/", {"email": "new@example.com"},
        HTTP_REFERER="http://testserver/accounts/me/?tab=mail",
    )  # fmt: skip
    assert answer.status_code == 302
    assert answer["Location"] == "/accounts/login/?next=%2Faccounts%2Fme%2F%3Ftab%3Dmail"
    login = client.get(answer["Location"]).content.decode()
    assert "You were signed out, so that form was not taken" in login
    elsewhere = Client().post("/accounts/me/email/", {"email": "x@example.com"},
                              HTTP_REFERER="https://evil.example/accounts/me/")  # fmt: skip
    assert elsewhere["Location"] == "/accounts/login/?next=%2F"
    # A page shown in answer to a form (a closure's second step) sits at an address that
    # takes only forms: not a place to come back to (it would be a 405), so the home page.
    answered = Client().post("/staff/closures/close/", {},
                             HTTP_REFERER="http://testserver/staff/closures/check/")  # fmt: skip
    assert answered["Location"] == "/accounts/login/?next=%2F"
    assert "new@example.com" not in "".join(r.hvals(PERSON.key(person_id=buyer.id)))


def test_an_overlong_address_is_not_carried_through_the_login_or_the_language_switch(
    r, buyer, caplog
) -> None:
    """Django refuses to redirect to more than 16,384 characters (a 400 and a traceback in the
    log for anyone who sends a long query): the login and the language form come back to the
    page without its query, or to no page, instead; an address the login form takes (2,000
    characters, a booking page of 77 boxes over 31 days is about 1,100) still comes back."""
    long_query = "?" + "&".join(f"f{i}=" + "x" * 500 for i in range(40))  # 20 KB
    visitor = Client()
    answer = visitor.get("/book/mine/" + long_query)
    assert answer.status_code == 302
    assert answer["Location"] == "/accounts/login/?next=%2Fbook%2Fmine%2F"
    # The path stays as it was sent: an encoded "?" in it is not made the query's start.
    answer = visitor.get("/book/mine/a%3Fb/cancel/" + long_query)
    assert answer["Location"] == "/accounts/login/?next=%2Fbook%2Fmine%2Fa%253Fb%2Fcancel%2F"
    long_id = "\U0001f984" * 200  # 2,400 characters percent-encoded: no next at all
    answer = visitor.get(f"/book/mine/{long_id}/cancel/")
    assert answer.status_code == 302 and answer["Location"] == "/accounts/login/"
    page = visitor.get("/catalog/" + long_query).content.decode()
    assert 'name="next" type="hidden" value="/catalog/"' in page
    # After a form was sent, the page it was on (its Referer), shortened the same way.
    refused = visitor.post(
        "/accounts/login/",
        {"username": "x"},
        HTTP_REFERER="http://testserver/catalog/" + long_query,
    ).content.decode()
    assert 'name="next" type="hidden" value="/catalog/"' in refused
    booking = "/book/?cls=C&room=7&start=10&end=11&" + "&".join(f"box={b}" for b in range(1, 78))
    booking += "".join(f"&date=2026-12-{d:02d}" for d in range(1, 32))
    assert 1000 < len(booking) <= 2000
    signed_in = visitor.post(
        "/accounts/login/",
        {"username": buyer.username, "password": buyer.password, "next": booking},
    )
    assert signed_in.status_code == 302 and signed_in["Location"] == booking
    assert "DisallowedRedirect" not in caplog.text


def test_staff_required_refuses_buyers_with_403_and_admits_staff(buyer, staff, client_for):
    assert staff_view(request_as(Client())).status_code == 302
    refused = staff_view(request_as(client_for(buyer)))
    assert refused.status_code == 403
    assert "the staff secret" not in refused.content.decode()
    assert "This page is for staff only." in refused.content.decode()
    assert staff_view(request_as(client_for(staff))).content == b"the staff secret"


def test_revoking_staff_takes_effect_on_the_next_request(r, staff, client_for):
    client = client_for(staff)
    assert request_person(request_as(client)).is_staff
    staff_set(client=r, person_id=staff.id, is_staff=False)
    assert not request_person(request_as(client)).is_staff


def test_a_session_of_a_vanished_person_is_anonymous(r, buyer, client_for):
    client = client_for(buyer)
    r.flushall()
    assert session_person(request_as(client).session, client=r) == ANONYMOUS


def test_staff_set_refuses_an_unknown_id_and_writes_nothing(r):
    with pytest.raises(PersonNotFound):
        staff_set(client=r, person_id=99, is_staff=True)
    assert r.dbsize() == 0


def test_createstaff_takes_the_password_from_the_environment(r, monkeypatch):
    monkeypatch.setenv("STRONGROOM_STAFF_PASSWORD", "a-long-staff-secret-5")
    out = io.StringIO()
    call_command("createstaff", "Keeper", stdout=out)
    keeper = person_find(client=r, username="keeper")
    assert keeper is not None
    assert keeper == Person(id=keeper.id, username="Keeper", is_staff=True)
    assert "Keeper" in out.getvalue()
    response = Client().post(
        "/accounts/login/", {"username": "Keeper", "password": "a-long-staff-secret-5"}
    )
    assert response.status_code == 302


def test_createstaff_refuses_bad_names_and_weak_passwords(r, monkeypatch):
    monkeypatch.setenv("STRONGROOM_STAFF_PASSWORD", "a-long-staff-secret-5")
    with pytest.raises(CommandError, match="letters, digits"):
        call_command("createstaff", "bad name")
    monkeypatch.setenv("STRONGROOM_STAFF_PASSWORD", "short")
    with pytest.raises(CommandError, match="too short"):
        call_command("createstaff", "Keeper")
    assert r.dbsize() == 0


def test_staff_command_grants_and_revokes(r, buyer):
    out = io.StringIO()
    call_command("staff", buyer.username.lower(), "--grant", stdout=out)
    granted = person_get(client=r, person_id=buyer.id)
    assert granted is not None and granted.is_staff
    call_command("staff", buyer.username, "--revoke", stdout=out)
    revoked = person_get(client=r, person_id=buyer.id)
    assert revoked is not None and not revoked.is_staff
    with pytest.raises(CommandError, match="No person"):
        call_command("staff", "nobody", "--grant")


def test_demo_is_idempotent_and_prints_the_same_credentials(
    r: redis.Redis, settings, tmp_path, monkeypatch
):
    settings.STRONGROOM_DATA_DIR = tmp_path
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    first = demo.load_demo(r)
    second = demo.load_demo(r)
    assert first == second
    assert person_count(client=r) == 1 + len(demo.DEMO_BUYERS)
    curator = person_find(client=r, username=demo.DEMO_STAFF)
    assert curator is not None and curator.is_staff
    staff_line = next(line for line in first if line.startswith("staff login"))
    password = staff_line.rsplit(" / ", 1)[1]
    assert len(password) >= 12
    assert password in (tmp_path / demo.CREDENTIALS_FILE).read_text()
    assert (tmp_path / demo.CREDENTIALS_FILE).stat().st_mode & 0o077 == 0
    login = Client().post("/accounts/login/", {"username": demo.DEMO_STAFF, "password": password})
    assert login.status_code == 302


def test_staff_set_is_one_durable_round_trip(r, buyer):
    with round_trips() as trips:
        change = staff_set(client=r, person_id=buyer.id, is_staff=True)
    person = change.person
    assert trips.count == 1 and person.is_staff and person.username == buyer.username
    assert r.hget(PERSON.key(person_id=buyer.id), "is_staff") == "1"
