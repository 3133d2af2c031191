"""The waiting list pages: ask to be told when a sold-out slot frees, and stop waiting."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import ngettext, pgettext
from django.views.decorators.http import require_http_methods, require_POST

from accounts.access import login_required, signed_in_person
from booking.domain.rules import day_refusal, season_days, site_today
from booking.engine.waits import Wait, wait_leave, waits_join
from booking.slots.choice_check import Wanted, blocked_slots
from booking.slots.room_read import rooms_read
from booking.web import forms, pick_panel
from booking.web.pick_page import waitable
from strongroom.store import get_store

MAX_WAITS_AT_ONCE = 10


def _bookable_days() -> list[dt.date]:
    today = site_today()
    return [d for d in season_days() if not day_refusal(d, today)]


@dataclass(frozen=True)
class DayOption:
    """A day of the form's day list: `mark` says why it cannot be had now ("" when it can)."""

    date: dt.date
    mark: str
    selected: bool


def _day_options(choices: forms.Choices, owner: str) -> list[DayOption]:
    """The days one may wait for: those of the month shown that cannot be had now marked
    (sold out, held, closed: one read), the chosen day selected, else (the pickers' "A day
    sold out?" link names none) the first one sold out or held; else none, and the form asks
    for a day."""
    states: dict[dt.date, str] = {}
    if waitable(choices):
        month = pick_panel.month_build(client=get_store(), choices=choices, owner_id=owner)
        states = {day.date: day.state for week in month.weeks for day in week if day.date}
    words = {
        "sold_out": pgettext("a day to wait for", "sold out"),
        "sold_for": pgettext("a day to wait for", "sold out"),
        "held": pgettext("a day to wait for", "held by another buyer"),
        "closed": pgettext("a day to wait for", "closed: nothing to wait for"),
    }
    marks = {day: words[state] for day, state in states.items() if state in words}
    worth = sorted(day for day in marks if states[day] != "closed")
    chosen = set(choices.dates) or set(worth[:1])
    return [DayOption(day, marks.get(day, ""), day in chosen) for day in _bookable_days()]


def _with_days(context: dict[str, Any], choices: forms.Choices, owner: str) -> dict[str, Any]:
    """The form's context with its day list (one read of the room's month) and the page's
    words on priority."""
    days = _day_options(choices, owner)
    return {**context, "days": days, "day_chosen": any(day.selected for day in days),
            **_priority()}  # fmt: skip


def _waits(choices: forms.Choices) -> list[Wait]:
    """One wait per day (and per box for class C) of a complete choice."""
    assert choices.room is not None
    boxes: list[int | None] = list(choices.boxes) if choices.cls == "C" else [None]
    return [
        Wait(choices.room, choices.cls, date, choices.hours if choices.cls != "A" else None, box)
        for date in choices.dates
        for box in boxes
    ]


def _too_many() -> str:
    return _("At most %(count)d waiting lists at once: choose fewer days or boxes.") % {
        "count": MAX_WAITS_AT_ONCE
    }


def _free_now(choices: forms.Choices, owner_id: str) -> bool:
    """Whether every slot of a complete choice is free right now (one read of its room): then
    there is nothing to wait for, and the page says so as it opens."""
    assert choices.room is not None
    wanted = Wanted(choices.cls, choices.room, choices.dates, choices.hours, choices.boxes)
    [days] = rooms_read(
        client=get_store(), cls=choices.cls, rooms=[choices.room], dates=choices.dates,
        owner_id=owner_id,
    )  # fmt: skip
    return not blocked_slots(days, wanted)


def _priority() -> dict[str, int]:
    return {"priority_minutes": max(1, settings.STRONGROOM_WAIT_HOLD_SECONDS // 60)}


@require_http_methods(["GET", "HEAD", "POST"])
@login_required
def wait_page(request: HttpRequest) -> HttpResponse:
    """GET: the chosen class, room, hours and box with a day to pick. POST: join the list."""
    if request.method != "POST":
        choices, problems = forms.choices_from(request.GET)
        if choices.complete and len(_waits(choices)) > MAX_WAITS_AT_ONCE:
            problems = [*problems, _too_many()]  # said now, not once the form is sent
        owner = str(signed_in_person(request).id)
        free_now = choices.complete and not problems and _free_now(choices, owner)
        context = {"choices": choices, "problems": problems, "free_now": free_now}
        return render(request, "booking/wait.html", _with_days(context, choices, owner))
    # The day list's "Choose a day" sends an empty day: no day, not a malformed one.
    posted = request.POST.copy()
    posted.setlist("date", [day for day in posted.getlist("date") if day != ""])
    choices, _request, problems = forms.posted_request(posted)
    owner = str(signed_in_person(request).id)
    waits = _waits(choices) if not problems and choices.complete else []
    # More days than a booking takes are more waits than one form takes too: the waiting
    # list's own limit is the one to name (the booking's would say 31 where 10 is the most).
    dates_sent = len(forms.query_values(posted, "date"))
    if not waits or len(waits) > MAX_WAITS_AT_ONCE or dates_sent > MAX_WAITS_AT_ONCE:
        if len(waits) > MAX_WAITS_AT_ONCE or dates_sent > MAX_WAITS_AT_ONCE:
            problems = [_too_many()]
        elif not problems:
            problems = [_("Choose a class, a room, the hours (and a box) and one day to wait for.")]
        context = _with_days({"choices": choices, "problems": problems}, choices, owner)
        return render(request, "booking/wait.html", context, status=400)
    outcomes = waits_join(client=get_store(), owner_id=owner, waits=waits)
    joined = outcomes.count("ok")
    if joined:
        messages.success(
            request,
            ngettext(
                "You are on the waiting list: we will tell you when it frees.",
                "You are on %(count)d waiting lists: we will tell you when they free.",
                joined,
            )
            % {"count": joined},
        )
    if "free" in outcomes:
        messages.info(request, _("Good news: it is free right now: book it here."))
    if "limit" in outcomes:
        messages.warning(
            request,
            _(
                "You have as many waiting-list entries as one person may (%(most)d), the "
                "notices of slots that freed included: leave a waiting list or dismiss a "
                "notice on My bookings to wait for this one."
            )
            % {"most": settings.STRONGROOM_WAITS_PER_BUYER},
        )
    if "gone" in outcomes:
        messages.error(
            request, _("Your account is being deleted: nothing more can be booked for it.")
        )
    if "own" in outcomes:
        messages.info(
            request,
            _("You have booked that slot yourself: there is nothing to wait for."),
        )
    if "invalid" in outcomes:
        messages.error(request, _("That slot cannot be waited for."))
    if "closed" in outcomes:
        messages.error(request, _("That slot is closed: it cannot be waited for."))
    if outcomes.count("free") == len(outcomes):
        # Nothing to wait for: back to the booking page with the very same choice.
        return HttpResponseRedirect(reverse("booking:pick") + f"?{choices.query()}")
    if outcomes.count("own") == len(outcomes):  # the booking itself is what they look for
        return HttpResponseRedirect(reverse("booking:mine"))
    return HttpResponseRedirect(reverse("booking:mine") + "#waits")


@require_POST
@login_required
def wait_leave_page(request: HttpRequest) -> HttpResponse:
    """Stop waiting for a slot, or dismiss its notice."""
    owner = str(signed_in_person(request).id)
    if wait_leave(client=get_store(), owner_id=owner, entry=request.POST.get("entry", "")[:100]):
        messages.success(request, _("Removed from your waiting list."))
    return HttpResponseRedirect(reverse("booking:mine") + "#waits")
