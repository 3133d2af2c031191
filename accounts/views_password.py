"""The password: changed with the current one asked again, or reset by mail when forgotten;
the account deleted with it. The current password is checked under the login throttle."""

from __future__ import annotations

import redis
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_http_methods, require_POST

from accounts import emails, services
from accounts.access import login_required, signed_in_person
from accounts.account_page import profile_page
from accounts.clients import client_address
from accounts.devices import device_remember
from accounts.forms import (
    DeleteAccountForm,
    PasswordChangeForm,
    ResetRequestForm,
    SetPasswordForm,
    focus_first_error,
)
from accounts.gates import pair_cleared, password_confirmed, retry_after
from accounts.people import Person
from accounts.selectors import person_with_password
from accounts.sessions import request_sign_in, request_sign_out
from strongroom.store import get_store


def _password_saved(
    request: HttpRequest, form: SetPasswordForm, *, client: redis.Redis, person: Person
) -> HttpResponse | None:
    """Store the form's new password and sign this request in with it (other sessions end),
    this browser noted as the person's device under the new password: the redirect to the
    account page, or None with the refusal added to the form."""
    try:
        encoded = services.password_set(
            client=client, person_id=person.id, password=form.cleaned_data["new_password1"]
        )
    except ValidationError as error:
        form.add_error("new_password1", error)
        return None
    request_sign_in(request, person=person, password_hash=encoded)
    messages.success(request, _("Your password has been changed."))
    onward = redirect("accounts:profile")
    device_remember(request, onward, person_id=person.id, password_hash=encoded)
    return onward


@login_required
@sensitive_post_parameters("old_password", "new_password1", "new_password2")
@require_http_methods(["GET", "HEAD", "POST"])
def password_change(request: HttpRequest) -> HttpResponse:
    """Change one's password; other sessions of this person end, this one stays signed in."""
    client = get_store()
    person = signed_in_person(request)
    form = PasswordChangeForm(request.POST or None, person=person)
    status, locked_until = 200, 0
    if request.method == "POST" and form.is_valid():
        confirmed, status, locked_until = password_confirmed(
            request, form, "old_password", person=person, wrong=_("Your current password is wrong.")
        )
        if confirmed is not None:
            saved = _password_saved(request, form, client=client, person=confirmed)
            if saved is not None:
                return saved
    if form.errors and status == 200:
        status = 400
    focus_first_error(form, fallback="old_password")
    response = render(request, "accounts/password_change.html", {"form": form}, status=status)
    return retry_after(response, until_ms=locked_until)


@login_required
@sensitive_post_parameters("password")
@require_POST
def delete(request: HttpRequest) -> HttpResponse:
    """Delete the account: upcoming bookings are cancelled, collected ones kept anonymously."""
    client, person = get_store(), signed_in_person(request)
    form = DeleteAccountForm(request.POST)
    status, locked_until = 400, 0
    if form.is_valid():
        confirmed, status, locked_until = password_confirmed(
            request, form, "password", person=person, wrong=_("Your password is wrong.")
        )
        if confirmed is not None:
            services.account_delete(client=client, person_id=person.id)
            request_sign_out(request)
            messages.info(request, _("Your account is deleted."))
            return redirect("home")
    response = profile_page(request, delete_form=form, status=status)
    return retry_after(response, until_ms=locked_until)


@sensitive_post_parameters("login")
@require_http_methods(["GET", "HEAD", "POST"])
def reset_request(request: HttpRequest) -> HttpResponse:
    """'Forgot password': the same answer whether or not the account exists."""
    form = ResetRequestForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        emails.password_reset_request(
            client=get_store(),
            login=form.cleaned_data["login"],
            client_id=client_address(request),
        )
        return render(request, "accounts/reset_sent.html")
    status = 400 if form.errors else 200
    focus_first_error(form)
    return render(request, "accounts/reset_request.html", {"form": form}, status=status)


@never_cache  # its address carries the reset token: no cache, shared or private, keeps it
@sensitive_post_parameters("new_password1", "new_password2")
@require_http_methods(["GET", "HEAD", "POST"])
def reset_confirm(request: HttpRequest, person_id: int, token: str) -> HttpResponse:
    """The link from the reset mail: choose a new password (the link then stops working)."""
    client = get_store()
    if not emails.reset_token_check(client=client, person_id=person_id, token=token):
        return render(request, "accounts/reset_invalid.html", status=400)
    found = person_with_password(client=client, person_id=person_id)
    if found is None:
        return render(request, "accounts/reset_invalid.html", status=400)
    form = SetPasswordForm(request.POST or None, username=found[0].username)
    if request.method == "POST" and form.is_valid():
        saved = _password_saved(request, form, client=client, person=found[0])
        if saved is not None:  # a lock its guessers left on this connection goes too
            pair_cleared(
                client=client, username=found[0].username, client_id=client_address(request)
            )
            return saved
    status = 400 if form.errors else 200
    focus_first_error(form)
    return render(request, "accounts/reset_confirm.html", {"form": form}, status=status)
