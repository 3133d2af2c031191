"""Sign up, log in, log out, one's own account (the password's pages: views_password.py):
parse, call one domain function, render."""

from __future__ import annotations

from dataclasses import replace
from urllib.parse import quote, urlsplit

import redis
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import (
    require_http_methods,
    require_POST,
    require_safe,
)

from accounts import emails, services
from accounts.access import login_required, signed_in_person
from accounts.account_page import profile_page, profile_plan
from accounts.clients import client_address
from accounts.devices import device_check, device_remember
from accounts.forms import (
    EmailForm,
    LoginForm,
    SignupForm,
    focus_first_error,
)
from accounts.gates import (
    busy_message,
    busy_until_ms,
    locked_message,
    password_confirmed,
    retry_after,
    signup_gate,
)
from accounts.selectors import email_current, person_with_password
from accounts.sessions import request_sign_in, request_sign_out
from strongroom.ahead import reads_ahead
from strongroom.clock import minutes_until
from strongroom.context_processors import BACK_MOST
from strongroom.methods import takes_get
from strongroom.offload import Busy
from strongroom.store import get_store


def safe_next(request: HttpRequest, candidate: str | None) -> str:
    """`candidate` if it is a page on this site one can open (not overlong; not an address
    that takes only forms, such as logging out: a GET of it is a 405), else the home page."""
    if (
        candidate
        and len(candidate) <= BACK_MOST
        and url_has_allowed_host_and_scheme(
            candidate, allowed_hosts={request.get_host()}, require_https=request.is_secure()
        )
        and takes_get(urlsplit(candidate).path)
    ):
        return candidate
    return reverse("home")


def _signed_in_already(request: HttpRequest) -> HttpResponse | None:
    """The login and sign-up pages for someone signed in: on to where they were going (or the
    home page), with a word on how to use another account."""
    if request.method not in ("GET", "HEAD") or not request.user.is_authenticated:
        return None
    messages.info(request, _("You are signed in already: log out first to use another account."))
    return HttpResponseRedirect(safe_next(request, request.GET.get("next")))


@sensitive_post_parameters("password1", "password2")
@require_http_methods(["GET", "HEAD", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    """Create an account and sign in."""
    if (onward := _signed_in_already(request)) is not None:
        return onward
    next_url = safe_next(request, request.POST.get("next") or request.GET.get("next"))
    form = SignupForm(request.POST or None)
    valid = request.method == "POST" and form.is_valid()
    # A name already taken is said with the form's other problems, and before the gate: a typo
    # does not use up the allowance.
    name = form.cleaned_data.get("username") if form.is_bound else None
    refused = services.name_refusal(client=get_store(), username=name) if name else None
    if refused is not None:
        form.add_error("username", refused)
    elif valid:
        client = get_store()
        next_allowed = signup_gate(client=client, client_id=client_address(request))
        if next_allowed:
            form.add_error(
                None,
                _("Too many new accounts from your connection. Please try again later."),
            )
            focus_first_error(form, fallback="username")
            context = {"form": form, "next": next_url, "next_q": quote(next_url, safe="/")}
            response = render(request, "accounts/signup.html", context, status=429)
            return retry_after(response, until_ms=next_allowed)
        else:
            return _signed_up(request, form, client=client, next_url=next_url)
    focus_first_error(form)
    context = {"form": form, "next": next_url, "next_q": quote(next_url, safe="/")}
    # A refused form is a 400, as on the other account forms (the page is the same).
    return render(request, "accounts/signup.html", context, status=400 if form.errors else 200)


def _signed_up(
    request: HttpRequest, form: SignupForm, *, client: redis.Redis, next_url: str
) -> HttpResponse:
    """Create the account of a valid sign-up form and sign it in (the redirect), or show the
    form again with the name's refusal (taken at the same moment by someone else)."""
    context = {"form": form, "next": next_url, "next_q": quote(next_url, safe="/")}
    try:
        person = services.person_create(
            client=client,
            username=form.cleaned_data["username"],
            password=form.cleaned_data["password1"],
            open_lane=True,
        )
    except Busy:
        form.add_error(
            None,
            _(
                "Too many passwords are being hashed at this moment, so your account was not "
                "made yet. Please try again in a few seconds."
            ),
        )
        focus_first_error(form)
        response = render(request, "accounts/signup.html", context, status=503)
        return retry_after(response, until_ms=busy_until_ms())
    except ValidationError as error:
        form.add_error("username", error)
        focus_first_error(form)
        return render(request, "accounts/signup.html", context, status=400)
    found = person_with_password(client=client, person_id=person.id)
    onward = HttpResponseRedirect(next_url)
    if found is not None:
        request_sign_in(request, person=person, password_hash=found[1])
        services.login_record(client=client, person_id=person.id, language=request.LANGUAGE_CODE)
        device_remember(request, onward, person_id=person.id, password_hash=found[1])
    messages.success(request, _("Welcome, %(name)s.") % {"name": person.username})
    if form.cleaned_data["email"]:
        outcome = emails.email_set(
            client=client,
            person_id=person.id,
            email=form.cleaned_data["email"],
            next_url=next_url,
        )
        _say_email_outcome(request, outcome, form.cleaned_data["email"])
    return onward


@sensitive_post_parameters("password")
@require_http_methods(["GET", "HEAD", "POST"])
def login(request: HttpRequest) -> HttpResponse:
    """Sign in under the throttle; a wrong name and a wrong password read the same."""
    if (onward := _signed_in_already(request)) is not None:
        return onward
    form = LoginForm(request.POST or None, initial={"next": request.GET.get("next", "")})
    status, locked_until = 200, 0
    if request.method == "POST" and form.is_valid():
        outcome = services.login_attempt(
            client=get_store(),
            username=form.cleaned_data["username"],
            password=form.cleaned_data["password"],
            client_id=client_address(request),
            language=request.LANGUAGE_CODE,
            device=device_check(request),
        )
        if outcome.person is not None:
            request_sign_in(request, person=outcome.person, password_hash=outcome.password_hash)
            onward = HttpResponseRedirect(safe_next(request, form.cleaned_data["next"]))
            device_remember(
                request,
                onward,
                person_id=outcome.person.id,
                password_hash=outcome.password_hash,
            )
            return onward
        if outcome.busy:
            form.add_error(None, busy_message())
            status, locked_until = 503, busy_until_ms()
        elif outcome.locked:
            form.add_error(None, locked_message(outcome))
            status, locked_until = 429, outcome.locked_until_ms
        else:
            form.add_error(None, _("The username or the password is wrong."))
            status = 400
    elif request.method == "POST":
        status = 400
    focus_first_error(form, fallback="password")  # the name stays typed in, the password not
    next_url = form.data.get("next") if form.is_bound else request.GET.get("next", "")
    next_url = safe_next(request, next_url) if next_url else ""
    context = {"form": form, "next": next_url, "next_q": quote(next_url, safe="/")}
    response = render(request, "accounts/login.html", context, status=status)
    return retry_after(response, until_ms=locked_until)


@require_POST
def logout(request: HttpRequest) -> HttpResponse:
    """Sign out (POST only): the session is deleted."""
    request_sign_out(request)
    messages.info(request, _("You have logged out."))
    return redirect("home")


@login_required
@require_safe
@reads_ahead(profile_plan)
def profile(request: HttpRequest) -> HttpResponse:
    """One's own account: name, address, password, calendar, upcoming bookings, sessions,
    deletion."""
    return profile_page(request)


@login_required
@sensitive_post_parameters("current_password")
@require_POST
def email_change(request: HttpRequest) -> HttpResponse:
    """Save the address (a new one gets a confirmation link) and the language of mail. A change
    of the address (a new one, or none) asks for the current password, checked under the login
    throttle as a password change's is: the address is where a forgotten password is reset."""
    form = EmailForm(request.POST)
    if not form.is_valid():
        return profile_page(request, email_form=form, status=400)
    client, person = get_store(), signed_in_person(request)
    if form.cleaned_data["email"] != email_current(client=client, person_id=person.id):
        if not form.cleaned_data["current_password"]:
            form.add_error(
                "current_password", _("Enter your current password to change the address.")
            )
            return profile_page(request, email_form=form, status=400)
        confirmed, status, locked_until = password_confirmed(
            request,
            form,
            "current_password",
            person=person,
            wrong=_("Your current password is wrong."),
        )
        if confirmed is None:
            page = profile_page(request, email_form=form, status=status)
            return retry_after(page, until_ms=locked_until)
    outcome = emails.email_set(
        client=client,
        person_id=person.id,
        email=form.cleaned_data["email"],
        language=form.cleaned_data["language"],
    )
    _say_email_outcome(request, outcome, form.cleaned_data["email"])
    return redirect("accounts:profile")


def _say_email_outcome(request: HttpRequest, outcome: str, email: str) -> None:
    """The message for what `emails.email_set` did with a new address."""
    if outcome == "sent":
        message = _("We sent a link to %(email)s: open it to confirm your address.")
        messages.info(request, message % {"email": email})
    elif outcome == "waiting":
        message = _(
            "We sent a link to %(email)s: your address changes when you open it. Until then, "
            "mail and password resets go to the address in use."
        )
        messages.info(request, message % {"email": email})
    elif outcome == "waiting_later":
        message = _(
            "The new address waits, but it had as many confirmation mails this hour as we send: "
            "ask for the link again from your account later. Until then, mail goes to the "
            "address in use."
        )
        messages.warning(request, message)
    elif outcome == "later":
        message = _(
            "Your address is saved, but it had as many confirmation mails this hour as we send: "
            "ask for the link again from your account later."
        )
        messages.warning(request, message)
    else:
        messages.success(request, _("Your settings are saved."))


@login_required
@require_POST
def email_resend(request: HttpRequest) -> HttpResponse:
    """Send the confirmation link again."""
    resent = emails.email_resend(
        client=get_store(),
        person_id=signed_in_person(request).id,
        client_id=client_address(request),
    )
    if resent.outcome == "sent":
        messages.info(request, _("We sent the link again."))
    elif resent.outcome == "later":
        minutes = minutes_until(resent.opens_ms)
        message = ngettext(
            "No link was sent: your account or this address has had as many confirmation "
            "mails lately as we send. Please ask again in %(minutes)d minute.",
            "No link was sent: your account or this address has had as many confirmation "
            "mails lately as we send. Please ask again in %(minutes)d minutes.",
            minutes,
        )
        messages.warning(request, message % {"minutes": minutes})
    return redirect("accounts:profile")


@require_http_methods(["GET", "HEAD", "POST"])
def email_verify(request: HttpRequest, token: str) -> HttpResponse:
    """The link from the confirmation mail: a page whose button (a POST) confirms the address,
    so that a mail scanner or a link preview opening the link confirms nothing; then on to
    where the person was going."""
    if request.method != "POST":
        read = emails.verify_token_read(token)
        if read is None:
            return _verify_link_dead(request)
        return render(request, "accounts/verify_confirm.html", {"email": read[1]})
    verified = emails.email_verify(client=get_store(), token=token)
    if verified is None:
        return _verify_link_dead(request)
    if verified.taken:
        messages.error(
            request,
            _(
                "This email address is already in use by another account, so it was not "
                "confirmed. Please use another address."
            ),
        )
        return redirect("accounts:profile")
    if request.user.is_authenticated and signed_in_person(request).id != verified.person_id:
        # The link of another account (a shared computer): its address is confirmed, not yours.
        messages.success(
            request,
            _(
                "That link confirmed the email address of another account, not of the one "
                "signed in here."
            ),
        )
        return redirect("accounts:profile")
    messages.success(request, _("Your email address is confirmed."))
    if verified.next_url:
        return HttpResponseRedirect(safe_next(request, verified.next_url))
    return redirect("accounts:profile")


def _verify_link_dead(request: HttpRequest) -> HttpResponse:
    messages.error(
        request,
        _("This confirmation link is not valid any more. Send a new one from your account."),
    )
    return redirect("accounts:profile")


@login_required
@require_POST
def sessions_end(request: HttpRequest) -> HttpResponse:
    """Sign out every other browser; this one stays signed in."""
    client, person = get_store(), signed_in_person(request)
    epoch = services.sessions_end_others(client=client, person_id=person.id)
    found = person_with_password(client=client, person_id=person.id)
    if found is not None:
        request_sign_in(
            request, person=replace(found[0], session_epoch=epoch), password_hash=found[1]
        )
    messages.success(request, _("Every other session is signed out."))
    return redirect("accounts:profile")


@login_required
@require_POST
def calendar_token(request: HttpRequest) -> HttpResponse:
    """Make (or replace) the private calendar URL, or revoke it."""
    client, person = get_store(), signed_in_person(request)
    action = request.POST.get("action")
    if action == "revoke":
        services.calendar_token_revoke(client=client, person_id=person.id)
        messages.success(request, _("The calendar address no longer works."))
    elif action == "new":
        services.calendar_token_new(client=client, person_id=person.id)
        messages.success(request, _("Your private calendar address is ready."))
    else:  # not a button of the page's: the address in use stays as it is
        messages.error(
            request,
            _("That was not a button of this page: your calendar address is unchanged."),
        )
        return profile_page(request, status=400)
    return redirect("accounts:profile")
