"""Decorators for views that need a signed-in person or staff."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, cast
from urllib.parse import urlencode

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _

from accounts.clients import client_address
from accounts.people import AnonymousPerson, Person
from strongroom.context_processors import back_address, form_page_name, page_address


def request_client(request: HttpRequest) -> str:
    """The client (address) a request comes from, as the throttles count it (behind the
    proxy, the address it appended to X-Forwarded-For)."""
    return client_address(request)


View = Callable[..., HttpResponse]


# PersonMiddleware sets `request.user` to a Person or the AnonymousPerson; django-stubs type it
# as Django's user model, which this site does not have. These give it its real type.


def request_person(request: HttpRequest) -> Person | AnonymousPerson:
    """Who made the request: a signed-in Person or the AnonymousPerson."""
    return cast("Person | AnonymousPerson", request.user)


def signed_in_person(request: HttpRequest) -> Person:
    """The person of a request that passed `login_required` or `staff_required`."""
    return cast(Person, request.user)


def login_redirect(request: HttpRequest, *, back: str = "") -> HttpResponseRedirect:
    """Send the visitor to the login page, coming back here afterwards (without an overlong
    query: strongroom.context_processors.back_address). A form sent once the session had
    ended comes back to `back` (the view knows where its form is made) or the page it was on
    (its own address takes only forms), and is told that nothing was done."""
    if request.method == "POST":
        messages.warning(
            request,
            _("You were signed out, so that form was not taken: sign in, then send it again."),
        )
        back = back or page_address(request)
    else:
        back = back_address(request)
    query = f"?{urlencode({'next': back})}" if back else ""
    return HttpResponseRedirect(f"{reverse('accounts:login')}{query}")


def login_required(view: View) -> View:
    """Anonymous visitors are sent to the login page with ?next=."""
    return login_required_back(lambda _request: "")(view)


def login_required_back(back: Callable[[HttpRequest], str]) -> Callable[[View], View]:
    """`login_required` whose form, sent after the session ended, comes back after the login
    to `back(request)` (the page its form is made on, as the view knows it)."""

    def decorator(view: View) -> View:
        @functools.wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if not request.user.is_authenticated:
                return login_redirect(request, back=back(request))
            # The same page is where the answer's language switch comes back to.
            form_page_name(request, back)
            return view(request, *args, **kwargs)

        return cast(View, wrapper)

    return decorator


def staff_required(view: View) -> View:
    """Anonymous visitors go to the login page; signed-in non-staff get 403."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        person = request_person(request)
        if not person.is_authenticated:
            return login_redirect(request)
        if not person.is_staff:
            return render(request, "403.html", status=403)
        return view(request, *args, **kwargs)

    return wrapper


def identity_replies(request: HttpRequest, *, person_id: int) -> dict[str, Any] | None:
    """The replies of the reads registered to ride with the identity
    (accounts.extensions.identity_read) for `person_id`; None when the session was not read
    with them (an old-style key that names no one, or someone else)."""
    read = getattr(getattr(request, "session", None), "along_read", None)
    if read is None or read[0] != person_id:
        return None
    return dict(read[1])
