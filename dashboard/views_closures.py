"""/staff/closures/: close rooms, a range or the building for days or hours (with a reason),
see the bookings already inside before confirming, cancel them in one action, reopen."""

from __future__ import annotations

from django.contrib import messages
from django.core import signing
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_POST, require_safe

from accounts.access import signed_in_person, staff_required
from booking.selectors import Closure, closure_bookings, closures_list
from booking.services import (
    closure_add,
    closure_bookings_cancel,
    closure_new_id,
    closure_remove,
)
from dashboard.forms import ClosureForm, closure_days_text, closure_rooms_text
from dashboard.pages import render_page
from strongroom.store import get_store

_ID_CHARS = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
# Step two closes what step one listed, or nothing: the check signs the closure it showed.
_CHECKED_SALT = "strongroom.closure.checked"


def _shown(closure: Closure) -> list[object]:
    """Everything step one shows of a closure (the id, rooms, days, hours and reason), as
    its signature carries it."""
    hours = list(closure.hours) if closure.hours else None
    return [closure.id, list(closure.rooms), closure.first.isoformat(),
            closure.last.isoformat(), hours, closure.reason]  # fmt: skip


def _checked_mark(closure: Closure) -> str:
    return signing.dumps(_shown(closure), salt=_CHECKED_SALT, compress=True)


def _checked_as_shown(closure: Closure, mark: str) -> bool:
    try:
        return bool(signing.loads(mark, salt=_CHECKED_SALT) == _shown(closure))
    except signing.BadSignature:
        return False


def _page(
    request: HttpRequest, form: ClosureForm, status: int = 200, **more: object
) -> HttpResponse:
    context = {
        "closures": closures_list(client=get_store()),
        "form": form,
        "section": "closures",
        **more,
    }
    return render_page(request, "closures.html", context, status=status)


@require_safe
@staff_required
def closures(request: HttpRequest) -> HttpResponse:
    """The closures, and the form that adds one."""
    return _page(request, ClosureForm())


@require_POST
@staff_required
def closure_check(request: HttpRequest) -> HttpResponse:
    """Step one: the bookings already inside the closure, listed before anything is written
    (or, "Change" pressed at step two, the form again with what it held)."""
    form = ClosureForm(request.POST)
    if request.POST.get("change") == "1":
        return _page(request, form)
    if not form.is_valid():
        messages.error(request, _("Nothing was closed."))
        return _page(request, form, status=400)
    closure = form.closure(closure_new_id())
    inside = closure_bookings(client=get_store(), closure=closure)
    return _page(request, form, checked=closure, checked_mark=_checked_mark(closure), inside=inside)


@require_POST
@staff_required
def closure_confirm(request: HttpRequest) -> HttpResponse:
    """Step two: close (the id made at step one, so a repeat closes once) and, if asked, cancel
    the bookings inside with the reason (their buyers are mailed)."""
    form = ClosureForm(request.POST)
    closure_id = request.POST.get("closure_id", "")
    if not form.is_valid() or not 8 <= len(closure_id) <= 32 or set(closure_id) - _ID_CHARS:
        messages.error(request, _("Nothing was closed."))
        return _page(request, form, status=400)
    if not _checked_as_shown(form.closure(closure_id), request.POST.get("checked", "")):
        messages.error(
            request, _("This is not the closure that was checked: nothing was closed. Check it.")
        )
        return _page(request, form, status=400)
    client, actor = get_store(), str(signed_in_person(request).id)
    closure = closure_add(client=client, actor_id=actor, closure=form.closure(closure_id))
    # What is inside now, not what step one listed: a booking made or moved in between is
    # inside too, and nothing enters the closed slots any more.
    cancelled, kept = 0, []
    if request.POST.get("cancel_inside") == "1":
        cancelled = closure_bookings_cancel(client=client, actor_id=actor, closure=closure)
    else:
        kept = closure_bookings(client=client, closure=closure)
    if cancelled:
        said = ngettext(
            "Closed. %(count)d booking inside was cancelled; its buyer is told why.",
            "Closed. %(count)d bookings inside were cancelled; their buyers are told why.",
            cancelled,
        ) % {"count": cancelled}
    elif kept:
        said = ngettext(
            "Closed. %(count)d booking is inside the closure and was kept.",
            "Closed. %(count)d bookings are inside the closure and were kept.",
            len(kept),
        ) % {"count": len(kept)}
    else:
        said = _("Closed. No booking was inside.")
    (messages.warning if kept else messages.success)(request, said)
    return HttpResponseRedirect(reverse("dashboard:closures"))


@require_POST
@staff_required
def closure_reopen(request: HttpRequest, closure_id: str) -> HttpResponse:
    """Open again: one action."""
    client = get_store()
    shown = next((c for c in closures_list(client=client) if c.id == closure_id), None)
    if closure_remove(
        client=client, actor_id=str(signed_in_person(request).id), closure_id=closure_id
    ):
        if shown is None:  # gone from the list between the two reads: reopened all the same
            messages.success(request, _("Reopened."))
        else:
            messages.success(
                request,
                _("Reopened: %(rooms)s, %(days)s.")
                % {"rooms": closure_rooms_text(shown), "days": closure_days_text(shown)},
            )
    else:
        messages.error(request, _("There is no such closure."))
    return HttpResponseRedirect(reverse("dashboard:closures"))
