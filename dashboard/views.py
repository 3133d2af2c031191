"""The staff dashboard's overview, occupancy, catalog, keyspace and audit pages: parse the
request, call one selector or service, render (bookings and people: views_bookings,
views_people)."""

from __future__ import annotations

import datetime as dt
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST, require_safe

from accounts.access import signed_in_person, staff_required
from booking.domain.rules import (
    request_id_new,
    request_id_valid,
    season_end,
    season_start,
    site_today,
)
from booking.domain.window import window_current
from booking.selectors import inventory_keys, window_read
from booking.services import window_set
from dashboard import charts
from dashboard.forms import (
    AuditFilterForm,
    FlushForm,
    MapForm,
    SalesWindowForm,
)
from dashboard.occupancy import HeatMap, occupancy_map
from dashboard.pages import log_rows, render_page
from dashboard.season import season_name
from dashboard.selectors import Overview, audit_log, names_of, overview_recent
from dashboard.services import WrongSeasonName, season_flush
from strongroom.focus import first_error_focused
from strongroom.inventory import keyspace_stats
from strongroom.store import get_store

# --- overview ----------------------------------------------------------------------------------

# The three charts of the overview held in memory, rendered once per held overview and
# language: language -> (the overview they show, their HTML).
_charts: dict[str, tuple[Overview, SafeString]] = {}


def _charts_html(data: Overview) -> SafeString:
    """The overview's bar charts (SVG and tables), rendered again only when the figures or the
    language change."""
    language = get_language() or ""
    held = _charts.get(language)
    if held is not None and held[0] is data:
        return held[1]
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
        last_labelled=True,  # up to today
    )
    visitors_chart = charts.bar_chart(
        chart_id="chart-visitors",
        title=_("Unique visitors per day"),
        value_label=_("Unique visitors"),
        points=[(v.day.strftime("%m-%d"), v.visitors) for v in data.visits],
        last_labelled=True,
    )
    html = mark_safe(  # noqa: S308 - rendered by the template engine
        "".join(
            render_to_string("dashboard/_bar_chart.html", {"chart": chart})
            for chart in (per_day, views_chart, visitors_chart)
        )
    )
    _charts[language] = (data, html)
    return html


@require_safe
@staff_required
def overview(request: HttpRequest) -> HttpResponse:
    """Bookings and occupancy per class, bookings and visits per day, today's pickups (read
    at most STRONGROOM_OVERVIEW_CACHE_MS ago by this worker; the page says how long ago)."""
    recent = overview_recent(client=get_store(), max_age_ms=settings.STRONGROOM_OVERVIEW_CACHE_MS)
    context = {
        "data": recent.overview,
        "recent": recent,
        "charts_html": _charts_html(recent.overview),
        "section": "overview",
    }
    return render_page(request, "overview.html", context)


# --- occupancy map -----------------------------------------------------------------------------


@require_safe
@staff_required
def occupancy(request: HttpRequest) -> HttpResponse:
    """A heat map of one class on one day; a floor opens its rooms."""
    # Today, on sale from tomorrow (a rolling window) or already: its pickups; else the window's
    # first day. Unbound, the form shows the map the page shows (class B).
    today, start = site_today(), season_start()
    default_day = today if start - dt.timedelta(days=1) <= today <= season_end() else start
    form = MapForm(request.GET or None, initial={"date": default_day, "cls": "B"})
    heat = None
    if form.is_bound and not form.is_valid():
        messages.error(request, _("Check the highlighted fields of the map."))
    else:
        data = form.cleaned_data if form.is_bound else {}
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
    return render_page(request, "occupancy.html", context)


def _bookings_of_day(heat: HeatMap | None) -> str:
    if heat is None:
        return ""
    day = heat.date.isoformat()
    query = urlencode({"start": day, "end": day, "cls": heat.cls})
    return f"{reverse('dashboard:bookings')}?{query}"


# --- catalog, keyspace, audit ------------------------------------------------------------------


@require_safe
@staff_required
def catalog(request: HttpRequest) -> HttpResponse:
    """Where the catalog's staff pages are."""
    return render_page(request, "catalog.html", {"section": "catalog"})


@require_safe
@staff_required
def keyspace(request: HttpRequest) -> HttpResponse:
    """Every key family with its live count and memory, the inventory registry, the flush."""
    return _keyspace_page(request, FlushForm())


def _keyspace_page(request: HttpRequest, form: FlushForm, status: int = 200) -> HttpResponse:
    first_error_focused(form)  # the browser brings the field to mend into view, script or not
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
    return render_page(request, "keyspace.html", context, status=status)


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


@require_safe
@staff_required
def sales_window(request: HttpRequest) -> HttpResponse:
    """The days on sale now, and the form that changes them. The window is read from the
    store, not the process's copy: the page after a save shows what was saved."""
    window_read(client=get_store())
    window = window_current()
    initial = {
        "mode": "rolling" if window.rolling else "fixed",
        "days": window.days,
        "first": window.first,
        "last": window.last,
    }
    return _window_page(request, SalesWindowForm(initial=initial))


def _window_page(request: HttpRequest, form: SalesWindowForm, status: int = 200) -> HttpResponse:
    if status != 200:  # a refused form: the window in force as the store holds it
        window_read(client=get_store())
    start, end = season_start(), season_end()
    context = {
        "window": window_current(),
        "start": start,
        "end": end,
        "form": form,
        "request_id": _form_request_id(request),
        "section": "window",
    }
    return render_page(request, "window.html", context, status=status)


def _form_request_id(request: HttpRequest) -> str:
    """The window form's own id: the one it was sent with (a refused form shown again), else a
    new one."""
    token = request.POST.get("request_id", "")
    return token if request_id_valid(token) else request_id_new()


@require_POST
@staff_required
def sales_window_set(request: HttpRequest) -> HttpResponse:
    """Store a new sales window (audited); every page follows it without a restart."""
    form = SalesWindowForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("The window was not changed."))
        return _window_page(request, form, status=400)
    token = request.POST.get("request_id", "")
    saved = window_set(
        client=get_store(),
        actor_id=str(signed_in_person(request).id),
        window=form.sales_window(),
        reason=form.cleaned_data["reason"],
        # The form's own id: pressed twice (or retried), one save and one audit entry.
        request_id=token if request_id_valid(token) else "",
    )
    if saved.changed:
        messages.success(request, _("The sales window is changed."))
    else:
        messages.info(request, _("Nothing changed: that is the sales window in force."))
    return HttpResponseRedirect(reverse("dashboard:window"))


@require_safe
@staff_required
def audit(request: HttpRequest) -> HttpResponse:
    """Claims, cancels, pickups and staff actions, newest first, filterable by kind."""
    form = AuditFilterForm(request.GET or None)
    entries: list[Any] = []
    client = get_store()
    if form.is_bound and not form.is_valid():
        messages.error(request, _("Choose from the lists: a kind, and how many to show."))
    else:
        data = form.cleaned_data if form.is_bound else {}
        entries = audit_log(
            client=client, kind=data.get("kind") or None, count=data.get("count") or 50
        )
    names = names_of(client=client, ids=[e.actor for e in entries])
    rows = log_rows(entries, client=client)
    context = {"form": form, "rows": rows, "names": names, "section": "audit"}
    return render_page(request, "audit.html", context)
