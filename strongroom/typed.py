"""What people type into a form or a query string, read one way on every page: a number is
the ASCII digits 0-9 only (Python's int() and Django's IntegerField read any script's decimal
digits, full-width or Arabic-Indic, as numbers), anything else is refused with one message,
and a refused value is echoed by its first characters only."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from django import forms
from django.utils.functional import lazy
from django.utils.translation import gettext_lazy as _

_SHOWN = 24  # at most this many characters of a bad value are echoed in a message
# Controls (C0, DEL, C1) and the marks that change the direction of text (Unicode's bidi class).
_HIDDEN = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_NUMBER = re.compile(r"-?[0-9]+")  # re's [0-9] is ASCII only, unlike \d
NUMBER_REFUSAL = _("%(field)s must be a number from %(min)s to %(max)s (not “%(value)s”).")


def shown_value(value: object) -> str:
    """A bad value as echoed in a message: its first characters only, a control or direction
    character among them named by its code point ("5\\u0000"), so that an echo can neither hide
    a character nor turn the sentence around it right to left."""
    text = str(value)
    text = text if len(text) <= _SHOWN else text[:_SHOWN] + "…"
    return _HIDDEN.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


def is_number(text: str) -> bool:
    """Whether `text` is a whole number written with the ASCII digits 0-9 (a minus allowed)."""
    return _NUMBER.fullmatch(text) is not None


def has_foreign_digits(text: str) -> bool:
    """Whether `text` holds a decimal digit other than 0-9 (full-width, Arabic-Indic...)."""
    return any(ch.isdecimal() and not ch.isascii() for ch in text)


def _number_refusal(field: object, low: object, high: object, value: object) -> str:
    return str(NUMBER_REFUSAL) % {
        "field": field, "min": low, "max": high, "value": shown_value(value),
    }  # fmt: skip


_number_refusal_lazy = lazy(_number_refusal, str)


def number_refusal(*, field: object, low: object, high: object, value: object) -> Any:
    """The one message refusing a value that is not a number of 0-9 digits ("The room must be a
    number from 001 to 300 (not “x”)."), translated when shown."""
    return _number_refusal_lazy(field, low, high, value)


class NumberField(forms.IntegerField):
    """Django's IntegerField reading only the digits 0-9: any other text is refused with
    `number_refusal`, named by the field's label and bounds (or by `refused(value)`, a message
    of the same kind for a field whose bounds are settings: the room)."""

    def __init__(self, *, refused: Callable[[str], Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.refused = refused

    def to_python(self, value: Any) -> int | None:
        text = value.strip() if isinstance(value, str) else value
        if isinstance(text, str) and text and not is_number(text):
            if self.refused is not None:
                raise forms.ValidationError(self.refused(text), code="invalid")
            low, high = self.min_value, self.max_value
            raise forms.ValidationError(
                number_refusal(field=self.label or "", low=low, high=high, value=text),
                code="invalid",
            )
        return super().to_python(value)
