"""The staff dashboard's pages: parse the request, call one selector or service, render."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from accounts.access import signed_in_person, staff_required
from accounts.selectors import login_summary, logins_recent, logins_top, person_id_find
from accounts.services import PersonNotFound
from booking.bitmap import inventory_keys
from booking.claims import booking_cancel
from booking.records import booking_get, bookings_of
from booking.rules import booking_id_room, season_end, season_start, site_today
from dashboard import charts, exports
from dashboard.forms import (
    AuditFilterForm,
    BookingFilterForm,
    CancelForm,
    FlushForm,
    MapForm,
    PersonSearchForm,
    StaffSetForm,
    kind_label,
)
from dashboard.season import season_name
from dashboard.selectors import (
    FilteredBookings,
    HeatMap,
    LogEntry,
    audit_log,
    booking_trail,
    bookings_filtered,
    names_of,
    occupancy_map,
)
from dashboard.selectors import (
    overview as overview_read,
)
from dashboard.services import SelfRevokeRefused, WrongSeasonName, season_flush, staff_grant_set
from dashboard.templatetags.dashboard_tags import name_of
from strongroom.inventory import keyspace_stats
from strongroom.store import get_store


def _page(
    request: HttpRequest, template: str, context: dict[str, Any], status: int = 200
) -> HttpResponse:
    return render(request, f"dashboard/{template}", context, status=status)


def _log_rows(entries: list[LogEntry], names: dict[int, str]) -> list[tuple[LogEntry, Any, str]]:
    """(entry, shown kind, actor's name or '') for the log table."""
    return [(e, kind_label(e.kind), name_of(names, e.actor)) for e in entries]


def _not_found(request: HttpRequest, message: str) -> HttpResponse:
    return _page(request, "not_found.html", {"message": message}, status=404)


# --- overview ----------------------------------------------------------------------------------


@require_GET
@staff_required
def overview(request: HttpRequest) -> HttpResponse:
    """Bookings and occupancy per class, bookings and visits per day, today's pickups."""
    data = overview_read(client=get_store())
    per_day = charts.bar_chart(
        chart_id="chart-bookings",
        title=_("Bookings per day of the season"),
        value_label=_("Bookings"),
        points=[(d.strftime("%m-%d"), n) for d, n in data.per_day],
    )
    views_chart = charts.bar_chart(
        chart_id="chart-views",
        title=_("Page views per day"),
        value_label=_("Page views"),
        points=[(v.day.strftime("%m-%d"), v.views) for v in data.visits],
    )
    visitors_chart = charts.bar_chart(
        chart_id="chart-visitors",
        title=_("Unique visitors per day"),
        value_label=_("Unique visitors"),
        points=[(v.day.strftime("%m-%d"), v.visitors) for v in data.visits],
    )
    context = {
        "data": data,
        "charts": [per_day, views_chart, visitors_chart],
        "section": "overview",
    }
    return _page(request, "overview.html", context)


# --- occupancy map -----------------------------------------------------------------------------


@require_GET
@staff_required
def occupancy(request: HttpRequest) -> HttpResponse:
    """A heat map of one class on one season day; a floor opens its rooms."""
    form = MapForm(request.GET or None)
    heat = None
    if form.is_bound and not form.is_valid():
        messages.error(request, _("Check the highlighted fields of the map."))
    else:
        data = form.cleaned_data if form.is_bound else {}
        today = site_today()
        default_day = today if season_start() <= today <= season_end() else season_start()
        date = data.get("date") or default_day
        cls = data.get("cls") or "B"
        hours = None
        if cls == "C":
            hours = (data.get("hour_start") or 0, data.get("hour_end") or 24)
            if hours[1] <= hours[0]:
                hours = (hours[0], 24)
        heat = occupancy_map(
            client=get_store(), cls=cls, date=date, floor=data.get("floor"), hours=hours
        )
        if data.get("floor") and heat.floor is None:
            messages.warning(request, _("There is no such floor; choose one from the summary."))
    context = {
        "form": form,
        "heat": heat,
        # Every cell link of the detail map starts with this; the cell adds room, hour or box.
        "bookings_of_day": _bookings_of_day(heat),
        "section": "occupancy",
    }
    return _page(request, "occupancy.html", context)


def _bookings_of_day(heat: HeatMap | None) -> str:
    if heat is None:
        return ""
    day = heat.date.isoformat()
    query = urlencode({"start": day, "end": day, "cls": heat.cls})
    return f"{reverse('dashboard:bookings')}?{query}"


# --- bookings ----------------------------------------------------------------------------------


def _filtered(request: HttpRequest) -> tuple[BookingFilterForm, FilteredBookings | None]:
    form = BookingFilterForm(request.GET or None)
    if form.is_bound and not form.is_valid():
        return form, None
    if not form.is_bound:
        form = BookingFilterForm({})
        form.is_valid()
    owner_id = None
    name = form.cleaned_data.get("person")
    client = get_store()
    if name:
        found_id = person_id_find(client=client, username=name)
        if found_id is None:
            messages.warning(request, _("Nobody is called “%(name)s”.") % {"name": name})
            return form, FilteredBookings([], False)
        owner_id = str(found_id)
    return form, bookings_filtered(client=client, wanted=form.booking_filter(owner_id))


@require_GET
@staff_required
def bookings(request: HttpRequest) -> HttpResponse:
    """The bookings of a date range (the composite-score index), filtered and paged."""
    form, found = _filtered(request)
    page = None
    if found is None:
        messages.error(request, _("Check the highlighted fields of the filter."))
    else:
        paginator = Paginator(found.bookings, settings.STRONGROOM_DASHBOARD_PAGE_SIZE)
        wanted = form.cleaned_data.get("page") or 1
        if wanted > paginator.num_pages:
            messages.warning(
                request,
                _("There is no page %(page)s; showing the last page.") % {"page": wanted},
            )
        page = paginator.get_page(wanted)
        if found.truncated:
            messages.warning(
                request, _("Only the first bookings of this range were read; narrow the filter.")
            )
    query = request.GET.copy()
    query.pop("page", None)
    context = {
        "form": form,
        "found": found,
        "page": page,
        "query": query.urlencode(),
        "section": "bookings",
    }
    return _page(request, "bookings.html", context)


def _export(request: HttpRequest, kind: str) -> HttpResponse:
    form, found = _filtered(request)
    if found is None:
        messages.error(request, _("Check the highlighted fields of the filter."))
        return _page(request, "bookings.html", {"form": form, "found": None, "section": "bookings"},
                     status=400)  # fmt: skip
    stamp = timezone.localtime().strftime("%Y%m%d-%H%M")
    if kind == "csv":
        body: str | bytes = exports.bookings_csv(found.bookings, found.names)
        response = HttpResponse(body, content_type="text/csv; charset=utf-8")
    else:
        body = exports.bookings_ics(found.bookings, found.names, host="strongroom")
        response = HttpResponse(body, content_type="text/calendar; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="bookings-{stamp}.{kind}"'
    return response


@require_GET
@staff_required
def bookings_csv(request: HttpRequest) -> HttpResponse:
    """The current filter as CSV (every matching booking, not just one page)."""
    return _export(request, "csv")


@require_GET
@staff_required
def bookings_ics(request: HttpRequest) -> HttpResponse:
    """The current filter as an iCalendar file, one event per booked day."""
    return _export(request, "ics")


@require_GET
@staff_required
def booking_detail(request: HttpRequest, booking_id: str) -> HttpResponse:
    """One booking with its audit trail and the cancel form."""
    return _booking_page(request, booking_id, CancelForm())


def _booking_page(
    request: HttpRequest, booking_id: str, form: CancelForm, status: int = 200
) -> HttpResponse:
    client = get_store()
    booking = booking_get(client=client, booking_id=booking_id)
    if booking is None:
        return _not_found(request, _("There is no booking with this id."))
    trail = booking_trail(client=client, booking_id=booking.id)
    names = names_of(
        client=client, ids=[booking.owner_id, booking.cancelled_by, *(e.actor for e in trail)]
    )
    context = {
        "booking": booking,
        "trail_rows": _log_rows(trail, names),
        "names": names,
        "form": form,
        "section": "bookings",
    }
    return _page(request, "booking_detail.html", context, status=status)


@require_POST
@staff_required
def booking_cancel_view(request: HttpRequest, booking_id: str) -> HttpResponse:
    """Cancel a booking as staff, with a reason that goes into the audit log."""
    if booking_id_room(booking_id) is None:
        return _not_found(request, _("There is no booking with this id."))
    form = CancelForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("The booking was not cancelled."))
        return _booking_page(request, booking_id, form, status=400)
    result = booking_cancel(
        client=get_store(),
        booking_id=booking_id,
        actor_id=str(signed_in_person(request).id),
        actor_is_staff=True,
        reason=form.cleaned_data["reason"],
    )
    if result.outcome == "not_found":
        return _not_found(request, _("There is no booking with this id."))
    (messages.success if result.ok else messages.error)(request, str(result.message))
    return HttpResponseRedirect(reverse("dashboard:booking", args=[booking_id]))


# --- people ------------------------------------------------------------------------------------


@require_GET
@staff_required
def people(request: HttpRequest) -> HttpResponse:
    """Recent logins, the most frequent visitors, and a search by name."""
    client = get_store()
    form = PersonSearchForm(request.GET or None)
    if form.is_bound and form.is_valid() and form.cleaned_data["q"]:
        found_id = person_id_find(client=client, username=form.cleaned_data["q"])
        if found_id is not None:
            return HttpResponseRedirect(reverse("dashboard:person", args=[found_id]))
        messages.warning(
            request, _("Nobody is called “%(name)s”.") % {"name": form.cleaned_data["q"]}
        )
    elif form.is_bound and not form.is_valid():
        messages.error(request, _("Check the name you searched for."))
    context = {
        "form": form,
        "recent": logins_recent(client=client, limit=20),
        "top": logins_top(client=client, limit=10),
        "section": "people",
    }
    return _page(request, "people.html", context)


@require_GET
@staff_required
def person_detail(request: HttpRequest, person_id: int) -> HttpResponse:
    """One person: login count, last login, bookings, staff rights."""
    client = get_store()
    summary = login_summary(client=client, person_id=person_id)
    if summary is None:
        return _not_found(request, _("There is no person with this id."))
    context = {
        "person": summary.person,
        "summary": summary,
        "bookings": bookings_of(client=client, owner_id=str(person_id), limit=100),
        "section": "people",
    }
    return _page(request, "person.html", context)


@require_POST
@staff_required
def person_staff(request: HttpRequest, person_id: int) -> HttpResponse:
    """Grant (is_staff=1) or revoke (is_staff=0) staff; audited."""
    form = StaffSetForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("Choose to grant or to revoke staff."))
        return HttpResponseRedirect(reverse("dashboard:person", args=[person_id]))
    grant = form.cleaned_data["is_staff"] == "1"
    try:
        person = staff_grant_set(
            client=get_store(), actor=signed_in_person(request), person_id=person_id, is_staff=grant
        )
    except PersonNotFound:
        return _not_found(request, _("There is no person with this id."))
    except SelfRevokeRefused:
        messages.error(
            request, _("You cannot revoke your own staff rights; ask another staff member.")
        )
        return HttpResponseRedirect(reverse("dashboard:person", args=[person_id]))
    if grant:
        messages.success(request, _("%(name)s is now staff.") % {"name": person.username})
    else:
        messages.success(request, _("%(name)s is no longer staff.") % {"name": person.username})
    return HttpResponseRedirect(reverse("dashboard:person", args=[person_id]))


# --- catalog, keyspace, audit ------------------------------------------------------------------


@require_GET
@staff_required
def catalog(request: HttpRequest) -> HttpResponse:
    """Where the catalog's staff pages are."""
    return _page(request, "catalog.html", {"section": "catalog"})


@require_GET
@staff_required
def keyspace(request: HttpRequest) -> HttpResponse:
    """Every key family with its live count and memory, the inventory registry, the flush."""
    return _keyspace_page(request, FlushForm())


def _keyspace_page(request: HttpRequest, form: FlushForm, status: int = 200) -> HttpResponse:
    client = get_store()
    stats = sorted(
        keyspace_stats(client),
        key=lambda s: (
            s.family is None,
            s.family.app if s.family else "",
            s.family.name if s.family else "",
        ),
    )
    context = {
        "stats": stats,
        "registry": inventory_keys(client=client),
        "season": season_name(),
        "form": form,
        "section": "keyspace",
    }
    return _page(request, "keyspace.html", context, status=status)


@require_POST
@staff_required
def keyspace_flush(request: HttpRequest) -> HttpResponse:
    """Flush the season's inventory once its name is typed; confirmed bookings are cancelled."""
    form = FlushForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("Nothing was flushed."))
        return _keyspace_page(request, form, status=400)
    try:
        done = season_flush(
            client=get_store(),
            actor=signed_in_person(request),
            confirmation=form.cleaned_data["confirmation"],
            reason=form.cleaned_data["reason"],
        )
    except WrongSeasonName:
        form.add_error(
            "confirmation",
            _("Type the season's name, %(name)s, exactly.") % {"name": season_name()},
        )
        messages.error(request, _("Nothing was flushed."))
        return _keyspace_page(request, form, status=400)
    messages.success(
        request,
        _(
            "Season %(season)s flushed: %(keys)s inventory keys removed, "
            "%(bookings)s bookings cancelled."
        )
        % {"season": done.season, "keys": done.keys_removed, "bookings": done.bookings_cancelled},
    )
    return HttpResponseRedirect(reverse("dashboard:keyspace"))


@require_GET
@staff_required
def audit(request: HttpRequest) -> HttpResponse:
    """Claims, cancels, pickups and staff actions, newest first, filterable by kind."""
    form = AuditFilterForm(request.GET or None)
    entries: list[Any] = []
    if form.is_bound and not form.is_valid():
        messages.error(request, _("Choose a kind from the list."))
    else:
        data = form.cleaned_data if form.is_bound else {}
        client = get_store()
        entries = audit_log(
            client=client, kind=data.get("kind") or None, count=data.get("count") or 50
        )
    rows = _log_rows(entries, names_of(client=get_store(), ids=[e.actor for e in entries]))
    context = {"form": form, "rows": rows, "section": "audit"}
    return _page(request, "audit.html", context)
