"""The account page: its first reads (sent with the identity) and its render. The page's fixed
parts and unbound forms are kept per language (`{% fixed %}` in accounts/profile.html, holes for
the person's values and the CSRF token); a refused form is rendered by Django as it stands."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

import redis
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import formats

from accounts.access import signed_in_person
from accounts.emails import EMAIL_MAX_LENGTH
from accounts.extensions import account_context, account_parts_reads
from accounts.forms import DeleteAccountForm, EmailForm, focus_first_error
from accounts.selectors import account_get, account_read
from accounts.sessions import session_key_person_id
from strongroom.ahead import Command, read_together
from strongroom.store import get_store
from strongroom.templatetags.links import link
from strongroom.templatetags.punctuation import listed


def profile_reads(*, client: redis.Redis, person_id: int) -> list[Command]:
    """The account page's first reads: the account's fields and every part's first reads."""
    return [
        *account_read(person_id=person_id),
        *account_parts_reads(client=client, person_id=person_id),
    ]


def profile_plan(request: HttpRequest) -> list[Command]:
    """The account page's first reads for the person the session's key names: sent with the
    session, used only when the settled identity is that person (strongroom/ahead.py)."""
    person_id = session_key_person_id(request.session.session_key or "")
    return [] if person_id is None else profile_reads(client=get_store(), person_id=person_id)


def upcoming_lines(upcoming: Iterable[Any]) -> list[dict[str, object]]:
    """What the page shows of each upcoming booking (the plugged part's `upcoming`), as text
    for the holes of its kept line: looked up in a dict, not through attributes and filters."""
    return [
        {
            "url": link("booking:done", b.id),
            "reference": b.reference,
            "cls": b.cls,
            "room": b.room_label,
            # Every day of it, as every page shows a day and My bookings lists them.
            "day": listed(formats.date_format(d, "DATE_FORMAT") for d in b.dates),
            "timed": bool(b.hours),
            "start": f"{b.hours[0]:02d}" if b.hours else "",
            "end": f"{b.hours[1]:02d}" if b.hours else "",
        }
        for b in upcoming
    ]


def profile_page(
    request: HttpRequest,
    *,
    email_form: EmailForm | None = None,
    delete_form: DeleteAccountForm | None = None,
    status: int = 200,
) -> HttpResponse:
    """The account page; `email_form` or `delete_form` when one was refused (shown with its
    errors), else both blank."""
    for refused in (email_form, delete_form):
        if refused is not None:
            focus_first_error(refused)
    client = get_store()
    person = signed_in_person(request)
    # One round trip for the account and the parts' first reads (none when read ahead).
    read_together(client, profile_reads(client=client, person_id=person.id))
    account = account_get(client=client, person_id=person.id)
    if account is None:  # deleted meanwhile
        return redirect("home")
    parts = account_context(client=client, person_id=person.id)
    context = {
        "account": account,
        "email_form": email_form,
        "delete_form": delete_form,
        # Read only when the blank forms are rendered to be kept (a class: called by the
        # template when first resolved).
        "blank_delete_form": DeleteAccountForm,
        "email_max_length": EMAIL_MAX_LENGTH,
        "mail_language": account.language or request.LANGUAGE_CODE,
        **parts,
        "upcoming_lines": upcoming_lines(cast("Iterable[Any]", parts.get("upcoming") or ())),
        "calendar_url": (
            request.build_absolute_uri(
                reverse("booking:subscription", args=[f"{person.id}-{account.calendar_token}"])
            )
            if account.calendar_token
            else ""
        ),
    }
    return render(request, "accounts/profile.html", context, status=status)
