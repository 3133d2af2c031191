"""Usernames: which ones are allowed, and the normal form that makes two spellings one name."""

from __future__ import annotations

import unicodedata

from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

USERNAME_MAX_LENGTH = 30
# Longer raw input is refused before normalising (NFKC can expand a character many times over).
USERNAME_INPUT_MAX_LENGTH = 60
USERNAME_PUNCTUATION = frozenset("_.-")
USERNAME_HELP = _(
    "1 to 30 characters: letters (any script, e.g. 中文), digits, and _ . - only. "
    "No spaces. Case does not matter: Anna and anna are the same name."
)


def name_key(username: str) -> str:
    """The normal form used to find a person: NFKC, case-folded, NFKC again."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", username).casefold())


def _allowed(char: str) -> bool:
    category = unicodedata.category(char)
    # Letters of any script, combining marks that belong to them, decimal digits.
    return category[0] in "LM" or category == "Nd" or char in USERNAME_PUNCTUATION


def username_validate(username: str) -> str:
    """Return the username as typed if it is allowed, else raise ValidationError."""
    if not username:
        raise ValidationError(_("Enter a username."), code="required")
    if len(username) > USERNAME_INPUT_MAX_LENGTH:
        raise ValidationError(_("A username is at most 30 characters."), code="max_length")
    normal = unicodedata.normalize("NFKC", username)
    if not 1 <= len(normal) <= USERNAME_MAX_LENGTH:
        raise ValidationError(_("A username is at most 30 characters."), code="max_length")
    if not all(_allowed(char) for char in normal):
        raise ValidationError(
            _("Use only letters, digits and _ . - in a username (no spaces or symbols)."),
            code="invalid_chars",
        )
    if unicodedata.category(normal[0])[0] == "M":
        raise ValidationError(_("A username starts with a letter or digit."), code="invalid_start")
    if all(char in USERNAME_PUNCTUATION for char in normal):
        raise ValidationError(
            _("A username needs at least one letter or digit."), code="no_letters"
        )
    return username
