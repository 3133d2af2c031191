"""What a book and a tag may be: limits and the checks shared by forms, queries and services."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

MAX_TITLE = 200
MAX_AUTHOR = 200
MAX_DESCRIPTION = 2000
MIN_YEAR = 1800
MAX_YEAR = 2100
MAX_TAG_LENGTH = 40
MAX_TAGS_PER_BOOK = 20
# Tags are typed as a comma separated list (ASCII or full-width comma).
TAG_SEPARATORS = re.compile(r"[,，、]")
_SPACES = re.compile(r"\s+")


class InvalidBook(ValueError):
    """Input the catalog refuses; the message is for the person who typed it."""


@dataclass(frozen=True)
class Book:
    """A book as the catalog stores it."""

    id: str
    title: str
    author: str
    year: int
    description: str
    tags: tuple[str, ...]
    version: str = "0"


DESCRIPTION_HIDDEN = gettext_lazy(
    "A description may have line breaks and tabs, but no other control characters."
)


def has_control_chars(text: str) -> bool:
    """Newlines, tabs, NULs and other invisible control characters."""
    return any(unicodedata.category(char) in ("Cc", "Cf", "Cs", "Co") for char in text)


def clean_tag(raw: str) -> str:
    """A tag as people type it, tidied: NFKC (the full-width letters of a Chinese keyboard are
    the same tag), lower case, single spaces. Raises InvalidBook."""
    if has_control_chars(raw):
        raise InvalidBook(_("A tag cannot contain line breaks or control characters."))
    tag = _SPACES.sub(" ", unicodedata.normalize("NFKC", raw)).strip().lower()
    if not tag:
        raise InvalidBook(_("A tag cannot be empty."))
    if len(tag) > MAX_TAG_LENGTH:
        raise InvalidBook(
            _("A tag has at most %(max)d characters; “%(tag)s…” is longer.")
            % {"max": MAX_TAG_LENGTH, "tag": tag[:20]}
        )
    if TAG_SEPARATORS.search(tag):
        raise InvalidBook(_("A tag cannot contain a comma."))
    return tag


def split_tags(text: str) -> list[str]:
    """The tags of a comma separated list, cleaned, without repeats, in typed order."""
    tags: list[str] = []
    for part in TAG_SEPARATORS.split(text):
        if part.strip() == "":
            continue
        tag = clean_tag(part)
        if tag not in tags:
            tags.append(tag)
    return tags


def sort_key(title: str) -> str:
    """The title as the title order compares it: case-folded, NFKC, without NULs."""
    return unicodedata.normalize("NFKC", title).casefold().replace("\0", "")


# What a description may hold besides visible text: line breaks and tabs. Not other control
# characters, nor the format characters that reorder text (a description could show its words
# in an order other than the one stored).
_TEXT_LAYOUT = frozenset("\n\t")
_BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)


def has_hidden_chars(text: str) -> bool:
    """Control characters other than line breaks and tabs, or bidirectional controls."""
    return any(
        char in _BIDI_CONTROLS
        or (unicodedata.category(char) in ("Cc", "Cs", "Co") and char not in _TEXT_LAYOUT)
        for char in text
    )


def check_book(*, title: str, author: str, year: int, description: str, tags: list[str]) -> None:
    """Refuse a book the catalog cannot store (the storage layer's own guard)."""
    if not title.strip() or len(title) > MAX_TITLE:
        raise InvalidBook(_("A title has 1 to %(max)d characters.") % {"max": MAX_TITLE})
    if not author.strip() or len(author) > MAX_AUTHOR:
        raise InvalidBook(_("An author has 1 to %(max)d characters.") % {"max": MAX_AUTHOR})
    if not MIN_YEAR <= year <= MAX_YEAR:
        raise InvalidBook(
            _("The year is between %(min)d and %(max)d.") % {"min": MIN_YEAR, "max": MAX_YEAR}
        )
    if len(description) > MAX_DESCRIPTION:
        raise InvalidBook(
            _("A description has at most %(max)d characters.") % {"max": MAX_DESCRIPTION}
        )
    if has_hidden_chars(description):
        raise InvalidBook(str(DESCRIPTION_HIDDEN))
    if len(tags) > MAX_TAGS_PER_BOOK:
        raise InvalidBook(_("A book has at most %(max)d tags.") % {"max": MAX_TAGS_PER_BOOK})
    if len(set(tags)) != len(tags):
        raise InvalidBook(_("A tag is listed twice."))
    for tag in tags:
        if not tag or len(tag) > MAX_TAG_LENGTH:
            raise InvalidBook(_("A tag has 1 to %(max)d characters.") % {"max": MAX_TAG_LENGTH})
