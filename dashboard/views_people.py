"""The staff dashboard's people pages: search, one person, granting or revoking staff."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST, require_safe

from accounts.access import signed_in_person, staff_required
from accounts.selectors import logins_recent, logins_top, person_id_find
from accounts.services import PersonNotFound
from dashboard.forms import (
    PersonSearchForm,
    StaffSetForm,
)
from dashboard.pages import not_found, person_context, render_page
from dashboard.services import SelfRevokeRefused, staff_grant_set
from strongroom.store import get_store


@require_safe
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
    return render_page(request, "people.html", context)


@require_safe
@staff_required
def person_detail(request: HttpRequest, person_id: int) -> HttpResponse:
    """One person: login count, last login, bookings, staff rights."""
    context = person_context(request, person_id)
    if context is None:
        return not_found(request, _("There is no person with this id."))
    return render_page(request, "person.html", context)


@require_POST
@staff_required
def person_staff_set(request: HttpRequest, person_id: int) -> HttpResponse:
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
        return not_found(request, _("There is no person with this id."))
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
