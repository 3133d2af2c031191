"""A form sent while the store is away is offered again on the 503 page, but no password of any
form is ever written into that page (issue 33, point 4)."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis
from django import forms
from django.test import Client, RequestFactory

from accounts.emails import reset_token_make
from strongroom import embedded
from strongroom.middleware import store_failure_response
from strongroom.store import StoreUnavailable
from tests.conftest import person_make

TYPED = "Typed-Secret-9q7Zx"


def test_a_reset_form_sent_while_the_store_is_away_does_not_echo_the_new_password(
    one_server: redis.Redis, tmp_path: Path
) -> None:
    someone = person_make(one_server, "reset_rosa")
    token = reset_token_make(client=one_server, person_id=someone.id)
    link = f"/accounts/password/reset/{someone.id}/{token}/"
    visitor = Client(raise_request_exception=False)
    assert visitor.get(link).status_code == 200
    embedded.stop(tmp_path / "one-server")  # the store stops answering
    answer = visitor.post(link, {"new_password1": TYPED, "new_password2": TYPED})
    assert answer.status_code == 503
    assert TYPED not in answer.content.decode()
    assert "new_password" not in answer.content.decode()


class _ShopForm(forms.Form):
    """A form of some later page whose password box has a name that says nothing."""

    pin = forms.CharField(widget=forms.PasswordInput)
    note = forms.CharField()


def _every_password_box() -> list[tuple[str, str]]:
    def walk(base: type) -> list[type]:
        children: list[type] = base.__subclasses__()
        return [sub for child in children for sub in (child, *walk(child))]

    import accounts.forms  # noqa: F401  (the site's own forms, loaded)
    import dashboard.forms  # noqa: F401

    return sorted(
        {
            (form.__qualname__, name)
            for form in walk(forms.BaseForm)
            for name, field in getattr(form, "base_fields", {}).items()
            if isinstance(field.widget, forms.PasswordInput)
        }
    )


@pytest.mark.parametrize(("form", "name"), _every_password_box())
def test_no_password_box_of_any_form_is_echoed_into_the_outage_page(form: str, name: str) -> None:
    request = RequestFactory().post("/somewhere/", {name: TYPED, "note": "kept"})
    answer = store_failure_response(request, StoreUnavailable("away"))
    assert answer is not None and answer.status_code == 503
    assert TYPED not in answer.content.decode(), f"{form}.{name} is echoed"


def test_a_field_that_is_no_secret_is_offered_again() -> None:
    request = RequestFactory().post("/book/claim/", {"room": "8", "booking_id": "008-x"})
    page = store_failure_response(request, StoreUnavailable("away"))
    assert page is not None
    assert 'name="booking_id" value="008-x"' in page.content.decode()
