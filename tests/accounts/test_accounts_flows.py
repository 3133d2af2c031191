"""Sign-up, log in, log out and password change through the real views and the real store."""

from __future__ import annotations

import html
import re

import pytest
import redis
from django.conf import settings
from django.core.exceptions import ValidationError
from django.test import Client

from accounts.people import Person
from accounts.selectors import login_summary, person_find, person_get
from accounts.services import NameTaken, person_create
from strongroom.keyspace import (
    PERSON,
    PERSON_BY_NAME,
    SESSION,
    VISITS_VIEWS,
    VISITS_VISITORS,
    family_of,
)
from tests.store_support import keys_stored

GOOD_PASSWORD = "correct-horse-battery-9"


@pytest.fixture(autouse=True)
def fast_hashing(settings) -> None:
    """New passwords get a fast hasher here (Django's advice for tests); the fixtures' PBKDF2
    hashes still verify, because PBKDF2 stays on the list."""
    settings.PASSWORD_HASHERS = [
        "django.contrib.auth.hashers.MD5PasswordHasher",
        "django.contrib.auth.hashers.PBKDF2PasswordHasher",
    ]


def signup(client: Client, username: str, password: str = GOOD_PASSWORD, again: str | None = None):
    return client.post(
        "/accounts/signup/",
        {"username": username, "password1": password, "password2": again or password},
    )


def login(client: Client, username: str, password: str, next_url: str = ""):
    return client.post(
        "/accounts/login/", {"username": username, "password": password, "next": next_url}
    )


def session_key(client: Client) -> str | None:
    cookie = client.cookies.get(settings.SESSION_COOKIE_NAME)
    return cookie.value if cookie else None


def test_signup_creates_the_person_signs_them_in_and_shows_the_name_as_typed(r: redis.Redis):
    client = Client()
    response = signup(client, "Zoë_Li")
    assert response.status_code == 302
    person = person_find(client=r, username="zoë_li")
    assert person == Person(id=1, username="Zoë_Li", is_staff=False)
    page = client.get("/accounts/me/")
    assert page.status_code == 200
    assert "Zoë_Li" in page.content.decode()
    assert page.context["request"].user == person
    zone = r'<span class="zone">\(Shanghai time\)</span>'
    # The day as every page shows one ("Nov. 20, 2026"), the time on the 24-hour clock.
    assert re.search(
        r"Last login</dt><dd>\w+\.? \d+, \d{4} \d\d:\d\d " + zone, page.content.decode()
    )


def test_signup_mapping_ignores_case_and_width(r: redis.Redis):
    assert signup(Client(), "Anna").status_code == 302
    for twin in ("anna", "ANNA", "Ａｎｎａ"):
        response = signup(Client(), twin)
        assert response.status_code == 400
        assert "This username is taken" in response.content.decode()
    assert r.hlen(PERSON_BY_NAME.key()) == 1


def _product_keys(r: redis.Redis) -> list[str]:
    """Every key but the page-view counters, which the session's served site (live_site)
    writes once a second by itself, whatever this test does."""
    counters = (VISITS_VIEWS, VISITS_VISITORS)
    return sorted(k for k in keys_stored(r) if not any(f.matches(k) for f in counters))


def test_signup_with_mismatched_or_weak_passwords_writes_nothing(r: redis.Redis):
    before = _product_keys(r)
    response = signup(Client(), "newcomer", GOOD_PASSWORD, "something-else-42")
    assert "The two passwords differ." in response.content.decode()
    assert response.status_code == 400  # refused, like the other account forms
    response = signup(Client(), "newcomer", "12345678")
    assert response.status_code == 400
    assert "too short" in response.content.decode()
    response = signup(Client(), "newcomer", "newcomer1234")
    assert "too similar" in response.content.decode()
    # A refused name does not hide the password's problems: all of them in one answer.
    both = html.unescape(signup(Client(), "bad name", "short").content.decode())
    assert "too short" in both and "Username" in both and both.count('class="errorlist') >= 2
    # Short and not the same twice: both said; a long name with an emoji: both said.
    mismatch = html.unescape(signup(Client(), "newcomer", "short", "shorter").content.decode())
    assert "too short" in mismatch and "The two passwords differ." in mismatch
    long_odd = html.unescape(signup(Client(), "n" * 31 + "🙂", GOOD_PASSWORD).content.decode())
    assert "at most 30 characters" in long_odd and "Use only letters" in long_odd
    assert _product_keys(r) == before
    assert person_find(client=r, username="newcomer") is None
    # A name someone has is said with the password's problems, not after they are mended.
    person_create(client=r, username="taken-name", password=GOOD_PASSWORD)
    taken = html.unescape(signup(Client(), "taken-name", "short").content.decode())
    assert "too short" in taken and "taken" in taken.lower()


def test_person_create_refuses_a_taken_name_with_name_taken(r: redis.Redis):
    person_create(client=r, username="Mei", password=GOOD_PASSWORD)
    keys_before = r.dbsize()
    with pytest.raises(NameTaken):
        person_create(client=r, username="MEI", password=GOOD_PASSWORD)
    assert r.dbsize() == keys_before


def test_login_rotates_the_session_and_counts_one_login(r: redis.Redis, buyer):
    client = Client()
    client.get("/accounts/login/")
    client.session.save()  # an anonymous session exists before logging in
    before = session_key(client)
    assert before and r.exists(SESSION.key(session_key=before))
    response = login(client, buyer.username.upper(), buyer.password)
    assert response.status_code == 302
    after = session_key(client)
    assert after and after != before
    assert not r.exists(SESSION.key(session_key=before))
    summary = login_summary(client=r, person_id=buyer.id)
    assert summary is not None and summary.logins == 1 and summary.last_login is not None


def test_a_name_with_spaces_at_its_ends_as_autofill_leaves_it_logs_in(buyer) -> None:
    assert login(Client(), f" {buyer.username}\t ", buyer.password).status_code == 302


def test_a_login_from_a_browser_in_another_language_keeps_the_chosen_mail_language(
    r: redis.Redis, buyer
):
    from accounts.services import language_set
    from strongroom.keyspace import PERSON

    language_set(client=r, person_id=buyer.id, language="en")
    chinese = Client(HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert login(chinese, buyer.username, buyer.password).status_code == 302
    assert r.hget(PERSON.key(person_id=buyer.id), "lang") == "en"


def test_wrong_password_and_unknown_name_read_the_same(r: redis.Redis, buyer):
    wrong = login(Client(), buyer.username, "not-the-password")
    unknown = login(Client(), "nobody-here", "not-the-password")
    assert wrong.status_code == unknown.status_code == 400
    message = "The username or the password is wrong."
    assert message in wrong.content.decode() and message in unknown.content.decode()
    summary = login_summary(client=r, person_id=buyer.id)
    assert summary is not None and summary.logins == 0


def test_a_refused_auth_form_puts_the_focus_where_the_fix_is(r: redis.Redis, buyer, client_for):
    """With or without script, the browser focuses (and scrolls to) the field to mend: the
    first with an error, or the login's password, described by the form's error."""

    def focused(page: str) -> list[str]:
        return re.findall(r"<input[^>]*\bautofocus\b[^>]*>", page)

    refused = login(Client(), buyer.username, "not-the-password").content.decode()
    [field] = focused(refused)
    assert 'name="password"' in field and 'aria-describedby="form-errors"' in field
    assert 'id="form-errors"' in refused
    [field] = focused(signup(Client(), "bad name", "short").content.decode())
    assert 'name="username"' in field
    [field] = focused(signup(Client(), "fine-name", "short").content.decode())
    assert 'name="password1"' in field
    change = client_for(buyer).post(
        "/accounts/password/", {"old_password": "wrong", "new_password1": "x", "new_password2": "y"}
    ).content.decode()  # fmt: skip
    assert len(focused(change)) == 1
    assert (
        len(focused(Client().post("/accounts/password/forgot/", {"login": ""}).content.decode()))
        == 1
    )
    assert not focused(Client().get("/accounts/login/").content.decode())


def test_someone_signed_in_is_sent_on_from_the_login_and_sign_up_pages(buyer, client_for):
    client = client_for(buyer)
    for page in ("/accounts/login/", "/accounts/signup/"):
        onward = client.get(page + "?next=/book/mine/")
        assert onward.status_code == 302 and onward["Location"] == "/book/mine/"
        home = client.get(page + "?next=https://evil.example/", follow=True)
        assert home.redirect_chain[-1][0] == "/"
        assert "You are signed in already" in home.content.decode()


def test_logout_is_post_only_and_deletes_the_session(r: redis.Redis, buyer, client_for):
    client = client_for(buyer)
    key = session_key(client)
    assert r.exists(SESSION.key(session_key=key))
    assert client.get("/accounts/logout/").status_code == 405
    assert client.get("/accounts/me/").status_code == 200
    response = client.post("/accounts/logout/")
    assert response.status_code == 302
    assert not r.exists(SESSION.key(session_key=key))
    assert client.get("/accounts/me/").status_code == 302


def test_forms_need_the_csrf_token(r: redis.Redis, buyer):
    client = Client(enforce_csrf_checks=True)
    assert login(client, buyer.username, buyer.password).status_code == 403
    assert signup(client, "csrfless").status_code == 403
    assert person_find(client=r, username="csrfless") is None


def test_password_change_needs_the_current_password_and_ends_other_sessions(
    r: redis.Redis, buyer, client_for
):
    here, elsewhere = client_for(buyer), client_for(buyer)
    new = "a-brand-new-secret-77"
    refused = here.post(
        "/accounts/password/",
        {"old_password": "wrong", "new_password1": new, "new_password2": new},
    )
    assert refused.status_code == 400
    assert "Your current password is wrong." in refused.content.decode()
    same = {"old_password": buyer.password, "new_password1": buyer.password,
            "new_password2": buyer.password}  # fmt: skip
    unchanged = here.post("/accounts/password/", same)
    assert unchanged.status_code == 400
    said = "The new password is the one you typed as current: choose a new one."
    assert said in unchanged.content.decode()
    assert elsewhere.get("/accounts/me/").status_code == 200  # nothing changed, nobody out
    changed = here.post(
        "/accounts/password/",
        {"old_password": buyer.password, "new_password1": new, "new_password2": new},
    )
    assert changed.status_code == 302
    assert here.get("/accounts/me/").status_code == 200
    assert elsewhere.get("/accounts/me/").status_code == 302
    assert login(Client(), buyer.username, buyer.password).status_code == 400
    assert login(Client(), buyer.username, new).status_code == 302


def test_password_change_page_needs_login():
    response = Client().get("/accounts/password/")
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=%2Faccounts%2Fpassword%2F"


@pytest.mark.parametrize(
    "hostile",
    ["a:b", "{x}", "*", "two words", " lead", "line\nbreak", "x" * 300, "smile😀", "", "...",
     "tab\there", "null\x00byte", "sr:{people}:by-name"],
)  # fmt: skip
def test_hostile_usernames_get_a_form_error_and_write_no_key(r: redis.Redis, hostile: str):
    client = Client()
    client.get("/accounts/signup/")
    keys_before = sorted(r.scan_iter(count=1000))
    response = signup(client, hostile)
    assert response.status_code == 400
    assert response.context["form"].errors.get("username"), hostile
    assert sorted(r.scan_iter(count=1000)) == keys_before
    assert not any(family_of(key) is PERSON for key in r.scan_iter(count=1000))


def test_cjk_and_accented_names_are_welcome(r: redis.Redis):
    for name in ("王小明", "José.M", "ナナ-7"):
        assert signup(Client(), name).status_code == 302, name
    people = [person_get(client=r, person_id=i) for i in (1, 2, 3)]
    assert [p.username if p else None for p in people] == [
        "王小明",
        "José.M",
        "ナナ-7",
    ]


@pytest.mark.parametrize(
    "target",
    ["https://evil.example/", "//evil.example/x", "https:evil.example", "/\\evil.example",
     "javascript:alert(1)", "http://testserver.evil.example/"],
)  # fmt: skip
def test_login_refuses_to_redirect_off_site(buyer, target: str):
    response = login(Client(), buyer.username, buyer.password, next_url=target)
    assert response.status_code == 302
    assert response["Location"] == "/"


def test_login_follows_next_on_this_site(buyer):
    response = login(Client(), buyer.username, buyer.password, next_url="/accounts/me/?tab=1")
    assert response["Location"] == "/accounts/me/?tab=1"


@pytest.mark.parametrize("target", ["/accounts/logout/", "/book/hold/", "/accounts/me/delete/"])
def test_login_does_not_go_on_to_an_address_that_takes_only_forms(buyer, target: str):
    """A GET of it would be a 405 page (and logging out is never where one was going)."""
    client = Client()
    response = client.post(
        f"/accounts/login/?next={target}",
        {"username": buyer.username, "password": buyer.password, "next": target},
    )
    assert response.status_code == 302 and response["Location"] == "/"
    assert client.get(response["Location"]).status_code == 200


def test_signup_refuses_an_off_site_next(r: redis.Redis):
    response = Client().post(
        "/accounts/signup/?next=https://evil.example/",
        {"username": "fresh", "password1": GOOD_PASSWORD, "password2": GOOD_PASSWORD},
    )
    assert response["Location"] == "/"


def test_session_cookie_flags(buyer):
    response = login(Client(), buyer.username, buyer.password)
    cookie = response.cookies[settings.SESSION_COOKIE_NAME]
    assert cookie["httponly"] and cookie["samesite"] == "Lax"


def test_the_language_cookie_has_the_session_cookie_s_flags():
    client = Client()
    client.get("/accounts/login/")  # the CSRF cookie the language switch posts with
    response = client.post("/i18n/setlang/", {"language": "zh-hans", "next": "/"})
    cookie = response.cookies[settings.LANGUAGE_COOKIE_NAME]
    assert cookie.value == "zh-hans"
    assert cookie["httponly"] and cookie["samesite"] == "Lax"
    assert settings.LANGUAGE_COOKIE_SECURE == settings.SESSION_COOKIE_SECURE


def test_a_page_with_a_visitor_s_form_token_is_not_for_shared_caches():
    for path in ("/", "/accounts/login/", "/accounts/signup/", "/book/pickup/"):
        assert "private" in Client().get(path)["Cache-Control"], path


@pytest.mark.parametrize("blank", [" " * 12, "\t" * 12, "\u3000" * 12])
def test_a_password_of_spaces_alone_is_refused(r: redis.Redis, blank: str):
    with pytest.raises(ValidationError, match="spaces alone"):
        person_create(client=r, username="spacey", password=blank)
    assert r.dbsize() == 0


def test_pages_are_translated_into_chinese():
    client = Client(headers={"accept-language": "zh-hans"})
    assert "登录" in client.get("/accounts/login/").content.decode()
    assert "用户名" in client.get("/accounts/signup/").content.decode()


def test_a_bad_address_is_refused_in_the_site_s_own_chinese_words():
    client = Client(headers={"accept-language": "zh-hans"})
    data = {"username": "mail.typo", "password1": GOOD_PASSWORD, "password2": GOOD_PASSWORD}
    page = client.post("/accounts/signup/", {**data, "email": "not-an-email"}).content.decode()
    assert "请输入有效的邮箱地址。" in page and "Email" not in page


@pytest.mark.parametrize("hostile", ["a:b", "{x}", "*", "a b", "a\nb", "x" * 300, "😀", ""])
def test_person_create_refuses_hostile_names_without_writing(r: redis.Redis, hostile: str):
    with pytest.raises(ValidationError):
        person_create(client=r, username=hostile, password=GOOD_PASSWORD)
    assert r.dbsize() == 0


def test_oversized_passwords_are_refused_without_writing(r: redis.Redis):
    response = signup(Client(), "longpass", "p" * 10_000)
    assert response.status_code == 400
    assert response.context["form"].errors["password1"]
    assert r.dbsize() == 0


def test_signup_page_states_the_username_rules():
    page = Client().get("/accounts/signup/").content.decode()
    assert "1 to 30 characters" in page and "_ . -" in page and "No spaces" in page
    chinese = Client().get("/accounts/signup/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "太相似。您的密码" in chinese and "。 " not in chinese  # no space after a 。


def test_hostile_names_at_login_are_a_plain_failure(buyer):
    for hostile in ("a:b", "{people}", "*", "x" * 300):
        response = login(Client(), hostile, "whatever-password")
        assert response.status_code == 400
