"""Sign up, log in, log out, change password: parse, call one domain function, render."""

from __future__ import annotations

import math

from django.contrib import messages
from django.contrib.auth.hashers import check_password
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_http_methods, require_POST

from accounts import services
from accounts.access import login_required, signed_in_person
from accounts.clients import client_address
from accounts.forms import LoginForm, PasswordChangeForm, SignupForm
from accounts.selectors import login_summary, person_with_password
from accounts.sessions import request_sign_in, request_sign_out
from strongroom.clock import now_ms
from strongroom.store import get_store


def safe_next(request: HttpRequest, candidate: str | None) -> str:
    """`candidate` if it is a path on this site, else the home page."""
    if candidate and url_has_allowed_host_and_scheme(
        candidate, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return candidate
    return reverse("home")


@sensitive_post_parameters("password1", "password2")
@require_http_methods(["GET", "HEAD", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    """Create an account and sign in."""
    next_url = safe_next(request, request.POST.get("next") or request.GET.get("next"))
    form = SignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        client = get_store()
        if services.signup_gate(client=client, client_id=client_address(request)):
            form.add_error(
                None,
                _("Too many new accounts from your connection. Please try again later."),
            )
            return render(
                request, "accounts/signup.html", {"form": form, "next": next_url}, status=429
            )
        try:
            person = services.person_create(
                client=client,
                username=form.cleaned_data["username"],
                password=form.cleaned_data["password1"],
            )
        except ValidationError as error:
            form.add_error("username", error)
        else:
            found = person_with_password(client=client, person_id=person.id)
            if found is not None:
                request_sign_in(request, person=person, password_hash=found[1])
                services.login_record(client=client, person_id=person.id)
            messages.success(request, _("Welcome, %(name)s.") % {"name": person.username})
            return HttpResponseRedirect(next_url)
    return render(request, "accounts/signup.html", {"form": form, "next": next_url})


@sensitive_post_parameters("password")
@require_http_methods(["GET", "HEAD", "POST"])
def login(request: HttpRequest) -> HttpResponse:
    """Sign in under the throttle; a wrong name and a wrong password read the same."""
    form = LoginForm(request.POST or None, initial={"next": request.GET.get("next", "")})
    status = 200
    if request.method == "POST" and form.is_valid():
        outcome = services.login_attempt(
            client=get_store(),
            username=form.cleaned_data["username"],
            password=form.cleaned_data["password"],
            client_id=client_address(request),
        )
        if outcome.person is not None:
            request_sign_in(request, person=outcome.person, password_hash=outcome.password_hash)
            return HttpResponseRedirect(safe_next(request, form.cleaned_data["next"]))
        if outcome.locked:
            minutes = max(1, math.ceil((outcome.locked_until_ms - now_ms()) / 60_000))
            form.add_error(
                None,
                ngettext(
                    "Too many failed logins for this username from your connection. "
                    "Please try again in %(minutes)d minute.",
                    "Too many failed logins for this username from your connection. "
                    "Please try again in %(minutes)d minutes.",
                    minutes,
                )
                % {"minutes": minutes},
            )
            status = 429
        else:
            form.add_error(None, _("The username or the password is wrong."))
            status = 400
    elif request.method == "POST":
        status = 400
    return render(request, "accounts/login.html", {"form": form}, status=status)


@require_POST
def logout(request: HttpRequest) -> HttpResponse:
    """Sign out (POST only): the session is deleted."""
    request_sign_out(request)
    messages.info(request, _("You have logged out."))
    return redirect("home")


@login_required
@sensitive_post_parameters("old_password", "new_password1", "new_password2")
@require_http_methods(["GET", "HEAD", "POST"])
def password_change(request: HttpRequest) -> HttpResponse:
    """Change one's password; other sessions of this person end, this one stays signed in."""
    client = get_store()
    person = signed_in_person(request)
    form = PasswordChangeForm(request.POST or None, person=person)
    if request.method == "POST" and form.is_valid():
        found = person_with_password(client=client, person_id=person.id)
        if found is None or not check_password(form.cleaned_data["old_password"], found[1]):
            form.add_error("old_password", _("Your current password is wrong."))
        else:
            try:
                encoded = services.password_set(
                    client=client,
                    person_id=person.id,
                    password=form.cleaned_data["new_password1"],
                )
            except ValidationError as error:
                form.add_error("new_password1", error)
            else:
                request_sign_in(request, person=found[0], password_hash=encoded)
                messages.success(request, _("Your password has been changed."))
                return redirect("accounts:profile")
    return render(
        request,
        "accounts/password_change.html",
        {"form": form},
        status=400 if form.errors else 200,
    )


@login_required
def profile(request: HttpRequest) -> HttpResponse:
    """One's own account: name, login count, last login."""
    summary = login_summary(client=get_store(), person_id=signed_in_person(request).id)
    return render(request, "accounts/profile.html", {"summary": summary})
