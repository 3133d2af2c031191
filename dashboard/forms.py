"""Forms of the staff dashboard: every query string and POST body is parsed here."""

from __future__ import annotations

import datetime as dt
import unicodedata
from typing import Any, cast

from django import forms
from django.conf import settings
from django.utils.translation import gettext_lazy as _

from booking.domain.refusals import room_refusal
from booking.domain.rules import CLASSES, STATUSES, season_end, season_start, site_today
from booking.domain.window import MAX_DAYS, SalesWindow
from booking.selectors import MAX_CLOSURE_DAYS, Closure, rooms_parse
from dashboard.audit_words import kind_label
from dashboard.season import season_name
from dashboard.selectors import BookingFilter
from strongroom.audit import audit_kinds
from strongroom.typed import NumberField, has_foreign_digits


def _choice_field(form: forms.Form, name: str) -> forms.ChoiceField:
    """A field the form's class declares as a ChoiceField (`form.fields` types it as Field)."""
    return cast(forms.ChoiceField, form.fields[name])


NAME_MAX = 64
REASON_MAX = 500
WINDOW_REACH_DAYS = 3653  # how far from today a fixed sales window's days may lie
_FORBIDDEN = set("\x00\r\n")


def _clean_text(value: str, *, label: Any) -> str:
    """One line of text; "" when nothing of it shows (spaces, or only zero-width and other
    format characters: a reason buyers would read as blank)."""
    text = " ".join(value.split())
    if any(ch in _FORBIDDEN or ord(ch) < 32 for ch in value if ch not in "\t\r\n"):
        raise forms.ValidationError(_("%(field)s contains control characters.") % {"field": label})
    if not any(unicodedata.category(ch)[0] not in "CZ" for ch in text):
        return ""
    return text


class _DayInput(forms.DateInput):
    """<input type="date">: its value is an ISO date or nothing, whatever the page's language
    (zh would write 2026/12/01, which the browser shows as an empty box) and whatever was typed
    into the address (a refused "x" is said in the error, not put back into the box)."""

    input_type = "date"

    def format_value(self, value: Any) -> str | None:
        if isinstance(value, str):
            try:
                return dt.date.fromisoformat(value).isoformat()
            except ValueError:
                return None
        return value.isoformat() if isinstance(value, dt.date) else None


# Staff look at any day that holds bookings, not only the days on sale: today's pickups, days
# gone by, days a narrowed sales window no longer sells (their bookings stay). A few years
# either side of today and the sales window is the span the pages take.
STAFF_YEARS = 5


def listed_from() -> dt.date:
    """Where the bookings list starts unless told: today (its pickups), or the sales window's
    first day when that is earlier (a window of days gone by)."""
    return min(site_today(), season_start())


def _staff_date(value: dt.date | None) -> dt.date | None:
    first = dt.date(listed_from().year - STAFF_YEARS, 1, 1)
    last = dt.date(max(site_today(), season_end()).year + STAFF_YEARS, 12, 31)
    if value is not None and not first <= value <= last:
        raise forms.ValidationError(
            _("Choose a date from %(start)s to %(end)s.")
            % {"start": first.isoformat(), "end": last.isoformat()}
        )
    return value


def class_choices(blank: bool) -> list[tuple[str, Any]]:
    labels = {"A": _("A (finest)"), "B": _("B (fine)"), "C": _("C (value)")}
    choices: list[tuple[str, Any]] = [("", _("any class"))] if blank else []
    return choices + [(cls, labels[cls]) for cls in CLASSES]


class BookingFilterForm(forms.Form):
    """The bookings list's filter (GET). Unset dates mean from today on, with no end."""

    start = forms.DateField(
        label=_("From"),
        required=False,
        widget=_DayInput(),
        help_text=_("Empty: from today (or the sales window's first day, if earlier)."),
    )
    end = forms.DateField(
        label=_("To"), required=False, widget=_DayInput(), help_text=_("Empty: no end.")
    )
    cls = forms.ChoiceField(label=_("Class"), required=False, choices=())
    room = NumberField(label=_("Room"), required=False, min_value=1, refused=room_refusal)
    status = forms.ChoiceField(label=_("Status"), required=False, choices=())
    person = forms.CharField(label=_("Person"), required=False, max_length=NAME_MAX)
    hour = NumberField(label=_("Hour"), required=False, min_value=0, max_value=23)
    box = NumberField(label=_("Box"), required=False, min_value=1, max_value=100)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _choice_field(self, "cls").choices = class_choices(blank=True)
        status_labels = {
            "confirmed": _("confirmed"), "collected": _("collected"), "cancelled": _("cancelled"),
        }  # fmt: skip
        _choice_field(self, "status").choices = [("", _("any status"))] + [
            (s, status_labels[s]) for s in STATUSES
        ]
        self.fields["room"].widget.attrs.update(
            {"min": 1, "max": settings.STRONGROOM_ROOM_COUNT, "inputmode": "numeric"}
        )

    def clean_start(self) -> dt.date | None:
        return _staff_date(self.cleaned_data.get("start"))

    def clean_end(self) -> dt.date | None:
        return _staff_date(self.cleaned_data.get("end"))

    def clean_room(self) -> int | None:
        room = self.cleaned_data.get("room")
        if room is not None and room > settings.STRONGROOM_ROOM_COUNT:
            raise forms.ValidationError(
                _("Rooms are numbered 1 to %(count)s.") % {"count": settings.STRONGROOM_ROOM_COUNT}
            )
        return room

    def clean_person(self) -> str:
        return _clean_text(self.cleaned_data.get("person", ""), label=_("Person"))

    def clean(self) -> dict[str, Any]:
        # Form.clean returns cleaned_data (the stubs allow None, for overrides).
        data = cast("dict[str, Any]", super().clean())
        start, end = data.get("start"), data.get("end")
        if start and end and end < start:
            self.add_error("end", _("The range ends before it starts."))
        elif end and not start and end < listed_from():
            self.add_error("end", _("This is before today: choose a From date as well."))
        return data

    def booking_filter(self, owner_id: str | None) -> BookingFilter:
        """The validated filter (call after is_valid())."""
        data = self.cleaned_data
        return BookingFilter(
            start=data.get("start") or listed_from(),
            end=data.get("end") or dt.date.max,
            cls=data.get("cls") or None,
            room=data.get("room"),
            status=data.get("status") or None,
            owner_id=owner_id,
            hour=data.get("hour"),
            box=data.get("box"),
        )


class CancelForm(forms.Form):
    reason = forms.CharField(
        label=_("Reason"), max_length=REASON_MAX, widget=forms.Textarea(attrs={"rows": 3}),
        error_messages={"required": _("Give a reason: buyers and the audit log see it.")},
    )  # fmt: skip

    def clean_reason(self) -> str:
        text = _clean_text(self.cleaned_data["reason"], label=_("Reason"))
        if not text:
            raise forms.ValidationError(_("Give a reason: buyers and the audit log see it."))
        return text


def hour_range_refusal(start: int, end: int) -> Any:
    """Why an hour range that does not end after it starts is refused: empty (5-5), or
    backwards (9-5)."""
    if end == start:
        return _("The hour range is empty: it must end after it starts.")
    return _("The hour range ends before it starts.")


class MapForm(forms.Form):
    """The occupancy map's choice (GET): a day, a class, a floor, an hour range (C)."""

    date = forms.DateField(label=_("Date"), required=False, widget=_DayInput())
    cls = forms.ChoiceField(label=_("Class"), required=False, choices=())
    floor = NumberField(label=_("Floor"), required=False, min_value=1, max_value=999)
    hour_start = NumberField(label=_("From hour"), required=False, min_value=0, max_value=23)
    hour_end = NumberField(label=_("To hour"), required=False, min_value=1, max_value=24)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _choice_field(self, "cls").choices = class_choices(blank=False)

    def clean_date(self) -> dt.date | None:
        return _staff_date(self.cleaned_data.get("date"))

    def clean(self) -> dict[str, Any]:
        # Form.clean returns cleaned_data (the stubs allow None, for overrides).
        data = cast("dict[str, Any]", super().clean())
        start, end = data.get("hour_start"), data.get("hour_end")
        if start is not None and end is not None and end <= start:
            self.add_error("hour_end", hour_range_refusal(start, end))
        return data


class PersonSearchForm(forms.Form):
    q = forms.CharField(label=_("Name"), max_length=NAME_MAX, required=False)

    def clean_q(self) -> str:
        return _clean_text(self.cleaned_data.get("q", ""), label=_("Name"))


class StaffSetForm(forms.Form):
    is_staff = forms.ChoiceField(choices=[("1", "1"), ("0", "0")])


class FlushForm(forms.Form):
    confirmation = forms.CharField(
        label=_("Type the season's name to confirm"), max_length=NAME_MAX
    )
    # Required: a flush cancels every booking of the season, as one cancel needs a reason.
    reason = forms.CharField(
        label=_("Reason"), max_length=REASON_MAX, widget=forms.Textarea(attrs={"rows": 2}),
        error_messages={"required": _("Give a reason: buyers and the audit log see it.")},
    )  # fmt: skip

    def clean_reason(self) -> str:
        text = _clean_text(self.cleaned_data.get("reason", ""), label=_("Reason"))
        if not text:
            raise forms.ValidationError(_("Give a reason: buyers and the audit log see it."))
        return text

    def clean_confirmation(self) -> str:
        """Said with the reason's problem, if any (the flush checks the name again itself)."""
        typed = self.cleaned_data.get("confirmation", "")
        if typed.strip() != season_name():
            raise forms.ValidationError(
                _("Type the season's name, %(name)s, exactly.") % {"name": season_name()}
            )
        return typed


class AuditFilterForm(forms.Form):
    kind = forms.ChoiceField(label=_("Kind"), required=False, choices=())
    count = forms.TypedChoiceField(label=_("Show"), required=False, coerce=int,
                                   choices=[(50, "50"), (200, "200"), (1000, "1000")],
                                   # the stubs allow only str | None: Django takes any value
                                   empty_value=50)  # type: ignore[arg-type]  # fmt: skip

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _choice_field(self, "kind").choices = [("", _("all kinds"))] + [
            (kind, kind_label(kind)) for kind in audit_kinds()
        ]


class SalesWindowForm(forms.Form):
    """The days on sale: rolling (tomorrow to N days ahead) or fixed (a first and a last day)."""

    mode = forms.ChoiceField(
        label=_("Days on sale"),
        choices=[("rolling", _("rolling: from tomorrow")), ("fixed", _("fixed days"))],
        widget=forms.RadioSelect,
    )
    days = NumberField(label=_("Days ahead (rolling)"), required=False, min_value=1,
                              max_value=MAX_DAYS)  # fmt: skip
    first = forms.DateField(label=_("First day (fixed)"), required=False,
                            widget=forms.DateInput(attrs={"type": "date"}))  # fmt: skip
    last = forms.DateField(label=_("Last day (fixed)"), required=False,
                           widget=forms.DateInput(attrs={"type": "date"}))  # fmt: skip
    reason = forms.CharField(label=_("Reason"), max_length=REASON_MAX, required=False,
                             widget=forms.Textarea(attrs={"rows": 2}))  # fmt: skip

    def clean_reason(self) -> str:
        return _clean_text(self.cleaned_data.get("reason", ""), label=_("Reason"))

    def clean(self) -> dict[str, Any]:
        data = cast("dict[str, Any]", super().clean())
        if data.get("mode") == "rolling" and not data.get("days"):
            self.add_error("days", _("Say how many days ahead are on sale."))
        if data.get("mode") == "fixed":
            first, last = data.get("first"), data.get("last")
            if not first:
                self.add_error("first", _("Give the first day on sale."))
            if not last:
                self.add_error("last", _("Give the last day on sale."))
            today = site_today()
            for name, day in (("first", first), ("last", last)):
                # A far year (0001, 9999) is valid for DateField but overflows the calendar
                # arithmetic of every booking page once stored.
                if day and abs((day - today).days) > WINDOW_REACH_DAYS:
                    self.add_error(name, _("Choose a day within ten years of today."))
            if last and last <= today and not self.has_error("last"):
                # Booking is one day ahead: a window ending today or before sells nothing.
                self.add_error(
                    "last",
                    _(
                        "Nothing would be on sale: the last day must be tomorrow or later "
                        "(buyers book at least one day ahead)."
                    ),
                )
            elif first and last and not 0 <= (last - first).days < MAX_DAYS:
                self.add_error(
                    "last",
                    _("The last day is on or after the first, at most %(n)s days in all.")
                    % {"n": MAX_DAYS},
                )
        return data

    def sales_window(self) -> SalesWindow:
        """The window the valid form asks for."""
        data = self.cleaned_data
        if data["mode"] == "fixed":
            return SalesWindow(days=data.get("days") or 31, first=data["first"], last=data["last"])
        return SalesWindow(days=data["days"])


def closure_rooms_text(closure: Closure) -> str:
    """The rooms of a closure as staff read them: "the whole building", "room 007", "rooms
    005-010, 012"."""
    if closure.whole_building:
        return str(_("the whole building"))
    if len(closure.rooms) == 1:
        return str(_("room %(rooms)s") % {"rooms": closure.rooms_label})
    return str(_("rooms %(rooms)s") % {"rooms": closure.rooms_label})


def closure_days_text(closure: Closure) -> str:
    """Its days (one, or the first to the last) and its hours, or whole days."""
    days = closure.first.isoformat()
    if closure.last != closure.first:
        days = f"{days} – {closure.last.isoformat()}"
    if closure.hours is None:
        return str(_("%(days)s, whole days") % {"days": days})
    start, end = closure.hours
    return f"{days}, {start:02d}:00–{end:02d}:00"


class ClosureForm(forms.Form):
    """A closure: rooms ('all', '7', '5-10', '1, 3'), first and last day, optional hours, reason."""

    rooms = forms.CharField(
        label=_("Rooms"),
        max_length=200,
        help_text=_("all, one room (7), a range (5-10) or a list (1, 3, 5-7)"),
    )
    first = forms.DateField(label=_("First day"), widget=forms.DateInput(attrs={"type": "date"}))
    last = forms.DateField(label=_("Last day"), widget=forms.DateInput(attrs={"type": "date"}))
    hour_start = NumberField(label=_("From hour (empty: whole days)"), required=False,
                                    min_value=0, max_value=23)  # fmt: skip
    hour_end = NumberField(label=_("To hour"), required=False, min_value=1, max_value=24)
    reason = forms.CharField(
        label=_("Reason"), max_length=REASON_MAX, widget=forms.Textarea(attrs={"rows": 2}),
        error_messages={"required": _("Give a reason: buyers and the audit log see it.")},
    )  # fmt: skip

    def clean_reason(self) -> str:
        text = _clean_text(self.cleaned_data["reason"], label=_("Reason"))
        if not text:
            raise forms.ValidationError(_("Give a reason: buyers and the audit log see it."))
        return text

    def clean_rooms(self) -> tuple[int, ...]:
        if has_foreign_digits(self.cleaned_data["rooms"]):  # full-width...: numbers are 0-9
            raise forms.ValidationError(room_refusal(self.cleaned_data["rooms"].strip()))
        rooms = rooms_parse(self.cleaned_data["rooms"])
        if rooms is None:
            raise forms.ValidationError(
                _("Rooms are all, a room number, a range (5-10) or a list (1, 3, 5-7).")
            )
        return rooms

    def clean(self) -> dict[str, Any]:
        data = cast("dict[str, Any]", super().clean())
        first, last = data.get("first"), data.get("last")
        if first and last and not 0 <= (last - first).days < MAX_CLOSURE_DAYS:
            self.add_error("last", _("The last day is on or after the first, at most 366 days."))
        elif last and last < site_today():
            self.add_error("last", _("These days are over: a closure takes days from today on."))
        elif first and first < site_today():
            self.add_error("first", _("A closure starts today or later: these days have begun."))
        start, end = data.get("hour_start"), data.get("hour_end")
        refused = self.has_error("hour_start") or self.has_error("hour_end")  # said by its field
        if (start is None) != (end is None) and not refused:
            self.add_error("hour_end", _("Give both hours, or neither for whole days."))
        elif start is not None and end is not None and end <= start:
            self.add_error("hour_end", hour_range_refusal(start, end))
        return data

    def closure(self, closure_id: str) -> Closure:
        data = self.cleaned_data
        start, end = data.get("hour_start"), data.get("hour_end")
        hours = None if start is None or end is None else (start, end)
        return Closure(closure_id, data["rooms"], data["first"], data["last"], hours,
                       data["reason"])  # fmt: skip
