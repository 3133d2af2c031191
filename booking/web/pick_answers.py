"""What the booking page answers (booking/web/pick.py): its context, and a POST that takes
slots (hold, book) answered: the page again with the buyer's choices kept and why it did not
work (400, 403, 409, 429; the panel alone for htmx), or the next page (the confirmation of a
hold, the booking made)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from typing import Any

import redis
from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import SafeString
from django.utils.translation import get_language, ngettext
from django.utils.translation import gettext as _

from booking.domain.records import Booking, Slot, slots_all_own
from booking.domain.site_time import hour_range, zone_name
from booking.engine.bookings import (
    booking_covering,
    bookings_in_room_since,
    bookings_in_room_since_read,
)
from booking.engine.claims import ClaimResult
from booking.engine.holds import HoldResult
from booking.slots.choice_check import Blocked, blocked_each
from booking.web import forms, pick_alternatives, pick_page, pick_panel, taken_words
from booking.web.owner import request_owner
from booking.web.window import season_shown
from strongroom.ahead import read_together
from strongroom.clock import minute_up
from strongroom.middleware import is_fragment
from strongroom.store import get_store
from strongroom.templatetags.links import link

HOLD_SESSION_KEY = "booking_hold_id"
# The hold last turned into a booking, and that booking: Back to its confirm page leads to it.
HOLD_BOOKED_SESSION_KEY = "booking_hold_booked"
# The choice of the buyer's latest hold, [hold id, the booking page's query]: its link, once
# the hold ended (run out or given back), leads to that choice again.
HOLD_CHOICE_SESSION_KEY = "booking_hold_choice"


def page_url(choices: forms.Choices) -> str:
    query = choices.query()
    return reverse("booking:pick") + (f"?{query}" if query else "")


def taken_meanwhile(request: HttpRequest, panel: pick_panel.Panel) -> bool:
    """Whether the panel shows as taken what the page showed as free (its refresh says so)."""
    return bool(panel.blocked) and request.GET.get("was") == "free"


def page_context(
    request: HttpRequest,
    choices: forms.Choices,
    problems: list[Any],
    *,
    taken: tuple[Slot, ...] | list[Slot] = (),
    panel: pick_panel.Panel | None = None,
    alternatives_now: bool = True,
    strictly_read: bool = False,
    own_bookings: Sequence[Booking] | None = None,
) -> dict[str, Any]:
    """The booking page's context. `own_bookings`: the buyer's bookings in the room, read
    already by a refusal that is about them (else read here with the alternatives)."""
    client, owner = get_store(), request_owner(request)
    if panel is None:
        panel = pick_panel.panel_build(client=client, choices=choices, owner_id=owner)
    # A posted request the parser read strictly a moment ago is not read again.
    complete = choices.complete and not strictly_read
    complete_errors = forms.request_errors(choices) if complete else []
    # A complete choice that is not free: name its sold and held slots and offer the nearest
    # free ones (one more read, only then), never a "Hold" button for what is shown as taken.
    # A refused POST (`alternatives_now=False`) links to them instead: most answers of a
    # contended slot are refusals, and the neighbouring rooms are read only if asked for.
    alternatives: list[pick_alternatives.Suggestion] = []
    offer_alternatives = bool(panel.blocked) and not complete_errors
    if offer_alternatives and alternatives_now:
        alternatives = pick_alternatives.alternatives_build(
            client=client, choices=choices, owner_id=owner
        )
    later = page_url(choices) if offer_alternatives and not alternatives_now else ""
    # Slots the buyer booked themselves are named as theirs (read with the alternatives; on a
    # refused POST only when the refusal is about them, docs/performance.md).
    read_own = offer_alternatives and alternatives_now and owner and choices.complete
    if own_bookings is None and read_own:
        assert choices.room is not None and owner is not None
        own_bookings = bookings_in_room_since(
            client=client, owner_id=owner, room=choices.room, since=min(choices.dates)
        )
    own, own_whole = own_named(client, owner, choices, panel.blocked, own_bookings or ())
    return {
        "choices": choices,
        "problems": problems,
        "taken": [] if panel.blocked else taken_words.slots_described(taken),
        "blocked": taken_words.blocked_described(panel.blocked),
        "alternatives": alternatives,
        "alternatives_url": later,
        "own_booking": own,
        "own_whole": own_whole,
        # A closed slot cannot be waited for (the waiting list refuses it): not offered.
        "closed_any": any(b.closed for b in panel.blocked),
        "stamp": panel.stamp,
        "taken_meanwhile": taken_meanwhile(request, panel),
        "refresh_seconds": settings.STRONGROOM_POLL_SECONDS,
        "hours_text": hour_range(*choices.hours) if choices.hours else "",
        "map_url": pick_page.map_url(choices),
        "pickers_html": panel.pickers_html(choices, signed_in=request.user.is_authenticated),
        "complete_errors": complete_errors,
        "page_url": page_url(choices),
        "wait_url": reverse("booking:wait") + f"?{choices.query()}",
        "hold_minutes": max(1, settings.STRONGROOM_HOLD_SECONDS // 60),
        **season_shown(),
    }


def own_named(
    client: redis.Redis,
    owner: str | None,
    choices: forms.Choices,
    blocked: Sequence[Blocked],
    own: Sequence[Booking],
) -> tuple[Booking | None, bool]:
    """The buyer's own booking the page names (one that takes a slot of the choice), and
    whether everything that stands in the way of the choice is his own: then there is nothing
    to wait for (the waiting list refuses his own slots), and the page says it is his."""
    if owner is None or not own or not choices.complete:
        return None, False
    assert choices.room is not None and choices.cls is not None
    covering = booking_covering(
        client=client, owner_id=owner, room=choices.room, cls=choices.cls, dates=choices.dates,
        hours=choices.hours, boxes=choices.boxes, own=own,
    )  # fmt: skip
    slots = blocked_each(blocked)
    if covering is None or slots is None:
        return covering, False
    return covering, slots_all_own(own, cls=choices.cls, room=choices.room, slots=slots)


def refused(
    request: HttpRequest,
    choices: forms.Choices,
    problems: list[Any],
    *,
    status: int,
    taken: tuple[Slot, ...] = (),
    strictly_read: bool = False,
    own_bookings: Sequence[Booking] | None = None,
) -> HttpResponse:
    """The booking page again, the buyer's choices kept, with why it did not work. A slot
    taken meanwhile (409): the page reads the room only, and links to the nearest free
    alternatives (the booking page reads the neighbouring rooms when that link is followed).
    An htmx request gets the panel alone, swapped in place of the page's. `own_bookings`:
    the buyer's, read by a refusal about them, for the page to name."""
    if status == 409:
        read_together(get_store(), pick_panel.panel_reads(choices))
    alternatives_now = status != 409
    panel = pick_panel.panel_build(
        client=get_store(), choices=choices, owner_id=request_owner(request)
    )

    def whole_context() -> dict[str, Any]:
        return page_context(
            request, choices, problems, taken=taken, panel=panel,
            alternatives_now=alternatives_now, strictly_read=strictly_read,
            own_bookings=own_bookings,
        )  # fmt: skip

    kept = None
    # A panel that names the buyer's own booking is his alone: never a kept one.
    shared = own_bookings is None
    if pick_panel.KEPT_PANELS.active and panel.blocked and not alternatives_now and strictly_read:
        kept = _refusal_panel(request, panel, problems, whole_context) if shared else None
    # The page around a kept panel reads nothing else of the view's (its lead paragraph's
    # season comes from the context processor, as the footer's does).
    context = {"panel_html": kept} if kept is not None else whole_context()
    if not is_fragment(request):
        return render(request, "booking/book.html", context, status=status)
    response = HttpResponse(
        kept or render_to_string("booking/_panel.html", context, request), status=status
    )
    swap = {"HX-Retarget": "#booking-panel", "HX-Reswap": "outerHTML"}
    for name, value in {**swap, "HX-Push-Url": page_url(choices)}.items():
        response[name] = value
    return response


def _refusal_panel(
    request: HttpRequest,
    panel: pick_panel.Panel,
    problems: list[Any],
    whole_context: Callable[[], dict[str, Any]],
) -> SafeString | None:
    """The panel of a slot taken meanwhile (409) whose choice the room shows as not free,
    rendered once per kept panel (most answers of a contended slot are such refusals, each the
    same for everyone refused it): it shows the blocking slots and no form, so nothing of the
    person (no CSRF token), and neither alternatives nor the parser's messages (the request was
    read strictly, the alternatives are a link). The key names all else the panel shows; the
    page's context is built only to render it. None: the page renders its panel itself."""
    key = (
        get_language(), request.user.is_authenticated, taken_meanwhile(request, panel),
        tuple(str(p) for p in problems), settings.STRONGROOM_POLL_SECONDS,
        settings.STRONGROOM_HOLD_SECONDS,
    )  # fmt: skip
    html = panel.kept_html(
        key, lambda: render_to_string("booking/_panel.html", whole_context(), request)
    )
    # With the blocking slots shown the panel has no form: were one ever there, it would carry
    # this person's CSRF token to the others, so it is rendered for this request alone.
    return None if "csrfmiddlewaretoken" in html else html


def out_of_date(request: HttpRequest, choices: forms.Choices) -> HttpResponse:
    """400: the form's ids are not of this room or buyer (an old or altered form)."""
    message = _("This form is out of date: check your choices and book again.")
    return refused(request, choices, [message], status=400)


def slots_taken(
    request: HttpRequest,
    choices: forms.Choices,
    taken: tuple[Slot, ...],
    *,
    shown_free: bool = True,
) -> HttpResponse:
    """409, the slots are not free: "someone was faster" when the page had shown them free."""
    if shown_free:
        message = _("Someone was faster: these slots are no longer free.")
    else:
        message = _("These slots are not free: choose from what the page shows as free.")
    return refused(request, choices, [message], status=409, taken=taken, strictly_read=True)


def own_slots_taken(
    request: HttpRequest, choices: forms.Choices, taken: tuple[Slot, ...]
) -> HttpResponse | None:
    """409 for a hold of slots the buyer booked himself (his hold form sent again): his
    booking named and linked, as the booking page names it, not "someone was faster"; None
    when a slot is another's. His bookings are read here, on this refusal alone, and only when
    no slot is held (a hold is never his booking, and most refusals of a contended slot meet
    one): the POST reads nothing more up front (docs/performance.md). His index rides with
    the room's read the refusal makes anyway; his records are one round trip more, only when
    he has a booking in this room."""
    owner = request_owner(request)
    room, cls = choices.room, choices.cls
    if owner is None or room is None or not cls or not taken or any(s.held for s in taken):
        return None
    client, since = get_store(), min(slot.date for slot in taken)
    index = bookings_in_room_since_read(client=client, owner_id=owner, since=since)
    read_together(client, pick_panel.panel_reads(choices), index)
    own = bookings_in_room_since(client=client, owner_id=owner, room=room, since=since)
    if not slots_all_own(own, cls=cls, room=room, slots=taken):
        return None
    message = _("You have booked these slots yourself already: nothing more was held.")
    return refused(request, choices, [message], status=409, strictly_read=True, own_bookings=own)


def paced(request: HttpRequest, choices: forms.Choices, until: dt.datetime) -> HttpResponse:
    """429: the buyer's hourly booking allowance is spent (a hold is refused the same way: it
    would block slots the buyer may not book)."""
    most = settings.STRONGROOM_BOOKINGS_PER_HOUR
    message = ngettext(
        "You have made %(n)s booking in the last hour, the most one account may; you can "
        "book again from %(time)s (%(zone)s time).",
        "You have made %(n)s bookings in the last hour, the most one account may; you can "
        "book again from %(time)s (%(zone)s time).",
        most,
    ) % {
        "n": most,
        "time": timezone.localtime(minute_up(until)).strftime("%H:%M"),
        "zone": zone_name(),
    }
    return refused(request, choices, [message], status=429, strictly_read=True)


def gone(request: HttpRequest, choices: forms.Choices) -> HttpResponse:
    """403: the buyer's account is being deleted in another session."""
    message = _("Your account is being deleted: nothing more can be booked for it.")
    return refused(request, choices, [message], status=403)


def closed(request: HttpRequest, choices: forms.Choices, reason: str) -> HttpResponse:
    """A chosen slot is closed by the staff: say so, with their reason (nothing was written)."""
    message = _("Closed: %(reason)s. Choose other days or another room.") % {"reason": reason}
    return refused(request, choices, [message], status=409, strictly_read=True)


def _refused_by_rule(
    request: HttpRequest, choices: forms.Choices, result: HoldResult | ClaimResult
) -> HttpResponse | None:
    """The refusals a hold and a booking share: the hourly allowance spent, the account being
    deleted, a slot closed by the staff, a slot the waiting list has first. None when none
    applies."""
    if result.paced_until is not None:
        return paced(request, choices, result.paced_until)
    if result.gone:
        return gone(request, choices)
    if result.closed:
        return closed(request, choices, result.closed)
    if result.waited:
        message = _(
            "Someone is waiting for these slots, and the hold that had them has just run out: "
            "they are offered to the waiting list first, for a few minutes. Choose other "
            "slots, or look again in a minute to join the waiting list."
        )
        return refused(request, choices, [message], status=409)
    return None


def hold_answer(
    request: HttpRequest, choices: forms.Choices, result: HoldResult, hold_id: str
) -> HttpResponse:
    """A hold placed: its confirmation page; refused: the booking page with why."""
    if (answer := _refused_by_rule(request, choices, result)) is not None:
        return answer
    if result.cooling_until is not None:
        until = timezone.localtime(minute_up(result.cooling_until)).strftime("%H:%M")
        message = _(
            "You held slots in this room for as long as a hold lasts: to be fair to everyone, "
            "you can hold here again from %(time)s (%(zone)s time), whatever the calendar "
            "shows as free. Other rooms you can hold now."
        ) % {"time": until, "zone": zone_name()}
        return refused(request, choices, [message], status=409)
    if not result.ok:
        return own_slots_taken(request, choices, result.taken) or slots_taken(
            request, choices, result.taken, shown_free=request.POST.get("seen") == "free"
        )
    request.session[HOLD_SESSION_KEY] = hold_id
    request.session[HOLD_CHOICE_SESSION_KEY] = [hold_id, choices.query(month=None)]
    return HttpResponseRedirect(link("booking:confirm", hold_id))


def claim_answer(
    request: HttpRequest, choices: forms.Choices, result: ClaimResult, hold_id: str
) -> HttpResponse:
    """A booking made: its page (and the hold it came from remembered, so Back to the hold's
    confirmation leads to it); refused: the booking page with why."""
    if (answer := _refused_by_rule(request, choices, result)) is not None:
        return answer
    if not result.ok or result.booking is None:
        return slots_taken(request, choices, result.taken)
    if hold_id and request.session.get(HOLD_SESSION_KEY) == hold_id:
        del request.session[HOLD_SESSION_KEY]
        request.session[HOLD_BOOKED_SESSION_KEY] = [hold_id, result.booking.id]
    return HttpResponseRedirect(link("booking:done", result.booking.id))
