"""Usernames: which ones are allowed, and the normal form that makes two spellings one name."""

from __future__ import annotations

import functools
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
    problems = []  # every one at once: a long name with an emoji is told both
    if not 1 <= len(normal) <= USERNAME_MAX_LENGTH:
        problems.append(
            ValidationError(_("A username is at most 30 characters."), code="max_length")
        )
    if not all(_allowed(char) for char in normal):
        problems.append(
            ValidationError(
                _("Use only letters, digits and _ . - in a username (no spaces or symbols)."),
                code="invalid_chars",
            )
        )
    if problems:
        raise ValidationError(problems)
    if unicodedata.category(normal[0])[0] == "M":
        raise ValidationError(_("A username starts with a letter or digit."), code="invalid_start")
    if all(char in USERNAME_PUNCTUATION for char in normal):
        raise ValidationError(
            _("A username needs at least one letter or digit."), code="no_letters"
        )
    return username


def _prototype_choice(members: set[str], data: dict[str, list[dict[str, str]]]) -> str:
    # The prototype of a TR39 class is the member whose entry lists the rest; in a class of two
    # both list each other, and either serves, chosen the same way every time.
    return max(sorted(members), key=lambda member: len(data.get(member, ())))


@functools.cache
def _prototypes() -> dict[str, str]:
    """Every character listed in Unicode's confusables (TR39 data, as the confusable-homoglyphs
    package ships it) -> the one string that stands for its class of look-alikes."""
    from confusable_homoglyphs.confusables import confusables_data  # type: ignore[import-untyped]

    parent: dict[str, str] = {}

    def find(item: str) -> str:
        parent.setdefault(item, item)
        while parent[item] != item:
            parent[item] = parent[parent[item]]
            item = parent[item]
        return item

    for char, glyphs in confusables_data.items():
        for glyph in glyphs:
            parent[find(glyph["c"])] = find(char)
    classes: dict[str, set[str]] = {}
    for item in list(parent):
        classes.setdefault(find(item), set()).add(item)
    prototypes: dict[str, str] = {}
    for members in classes.values():
        prototype = _prototype_choice(members, confusables_data)
        prototypes.update((member, prototype) for member in members if len(member) == 1)
    return prototypes


_SMALL_CAPITAL = "LATIN LETTER SMALL CAPITAL "


def _loose(char: str) -> str:
    """Past TR39, what still passes for another name on a page: the punctuation a name may
    carry ('cu_rator', 'curator.'), a prototype in capitals ('curat0r' maps to 'curatOr'), a
    small capital ('curaтor': the Cyrillic т maps to ᴛ)."""
    if char in USERNAME_PUNCTUATION:
        return ""
    name = unicodedata.name(char, "")
    if name.startswith(_SMALL_CAPITAL) and len(name) == len(_SMALL_CAPITAL) + 1:
        return name[-1].lower()
    return char.casefold()


def name_skeleton(username: str) -> str:
    """The confusable skeleton (Unicode TR39) of a name's normal form, loosened (`_loose`): two
    names that look alike ('anna' and 'anna' spelt with a Cyrillic a, 'paypal' and 'paypa1',
    'curator' and 'curat0r' or 'cu_rator') have the same skeleton."""
    prototypes = _prototypes()
    decomposed = unicodedata.normalize("NFD", name_key(username))
    mapped = "".join(prototypes.get(char, char) for char in decomposed)
    return unicodedata.normalize("NFD", "".join(_loose(char) for char in mapped))
