"""The staff dashboard's people pages: search, one person, granting or revoking staff,
deleting a person."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from accounts.access import signed_in_person, staff_required
from accounts.people import Person
from accounts.selectors import logins_recent, logins_top, person_get, person_id_find
from accounts.services import PersonNotFound
from dashboard.forms import (
    PersonSearchForm,
    StaffSetForm,
)
from dashboard.pages import not_found, person_context, render_page
from dashboard.services import (
    DeleteRefused,
    SelfRevokeRefused,
    person_delete_by_staff,
    person_delete_check,
    staff_grant_set,
)
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
        change = staff_grant_set(
            client=get_store(), actor=signed_in_person(request), person_id=person_id, is_staff=grant
        )
    except PersonNotFound:
        return not_found(request, _("There is no person with this id."))
    except SelfRevokeRefused:
        messages.error(
            request, _("You cannot revoke your own staff rights; ask another staff member.")
        )
        return HttpResponseRedirect(reverse("dashboard:person", args=[person_id]))
    name = {"name": change.person.username}
    if not change.changed:  # nothing written, nothing audited
        if grant:
            said = _("Nothing changed: %(name)s is already staff.")
        else:
            said = _("Nothing changed: %(name)s is not staff.")
        messages.info(request, said % name)
    elif grant:
        messages.success(request, _("%(name)s is now staff.") % name)
    else:
        messages.success(request, _("%(name)s is no longer staff.") % name)
    return HttpResponseRedirect(reverse("dashboard:person", args=[person_id]))


@require_http_methods(["GET", "HEAD", "POST"])
@staff_required
def person_delete_staff(request: HttpRequest, person_id: int) -> HttpResponse:
    """GET: what deleting this person does, and the button (or why staff may not). POST: delete
    them as their own deletion does, audited; back to the people page."""
    client, actor = get_store(), signed_in_person(request)
    person = person_get(client=client, person_id=person_id)
    if person is None:
        return not_found(request, _("There is no person with this id."))
    refused = _delete_refusal(actor, person)
    if request.method != "POST" or refused:
        context = {"person": person, "refused": refused, "section": "people"}
        return render_page(request, "person_delete.html", context, status=403 if refused else 200)
    try:
        person_delete_by_staff(client=client, actor=actor, person_id=person_id)
    except PersonNotFound:
        return not_found(request, _("There is no person with this id."))
    except DeleteRefused:  # made staff in between
        return HttpResponseRedirect(reverse("dashboard:person_delete", args=[person_id]))
    messages.success(
        request,
        _("%(name)s is deleted: their upcoming bookings are cancelled and they are told by mail.")
        % {"name": person.username},
    )
    return HttpResponseRedirect(reverse("dashboard:people"))


def _delete_refusal(actor: Person, person: Person) -> str:
    """Why staff may not delete this person ('' when they may)."""
    try:
        person_delete_check(actor=actor, person=person)
    except DeleteRefused as refused:
        if refused.why == "self":
            return _("You cannot delete your own account here; ask another staff member.")
        return _("%(name)s is staff: revoke their staff rights first, then delete them.") % {
            "name": person.username
        }
    return ""
