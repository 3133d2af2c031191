"""Input of the catalog pages: the browse query from the URL, and the staff book form."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote_plus, urlencode

from django import forms
from django.conf import settings
from django.http import QueryDict
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from catalog import rules
from catalog.rules import InvalidBook
from catalog.selectors import SORTS, Query
from strongroom.typed import NumberField

# A query value longer than this is refused outright (20 tags of 40 characters fit easily).
MAX_PARAM_LENGTH = 1000
MAX_PAGE = 1_000_000
GROUPS = (("all", "all_of"), ("any", "any_of"), ("not", "none_of"))
_PAGE = re.compile(r"[0-9]{1,7}")
BOOK_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
# RegexField searches: anchored patterns for whole values.
STAMP = re.compile(r"^[A-Za-z0-9_-]{1,64}\Z")
VERSION = re.compile(r"^[0-9]{1,12}\Z")


def shorten(text: str, length: int = 30) -> str:
    """Text fit for a message: control characters shown as `?`, long text cut."""
    shown = "".join("?" if rules.has_control_chars(char) else char for char in text)
    return shown if len(shown) <= length else shown[: length - 1] + "…"


@dataclass
class ParsedQuery:
    """The query a URL asks for, and what had to be said about its input."""

    query: Query
    problems: list[str] = field(default_factory=list)


def browse_query_parse(params: QueryDict) -> ParsedQuery:
    """Read `?all=…&any=…&not=…&sort=…&page=…`; bad parts are dropped with a message."""
    problems: list[str] = []
    groups: dict[str, list[str]] = {"all_of": [], "any_of": [], "none_of": []}
    seen = 0
    dropped = 0
    limit = settings.CATALOG_MAX_QUERY_TAGS
    for param, group in GROUPS:
        for value in params.getlist(param):
            if len(value) > MAX_PARAM_LENGTH:
                problems.append(
                    _("A tag list longer than %(max)d characters was ignored.")
                    % {"max": MAX_PARAM_LENGTH}
                )
                continue
            for part in rules.TAG_SEPARATORS.split(value):
                if not part.strip():
                    continue
                try:
                    tag = rules.clean_tag(part)
                except InvalidBook as exc:
                    problems.append(
                        _("“%(tag)s” is not a valid tag: %(reason)s")
                        % {"tag": shorten(part), "reason": exc}
                    )
                    continue
                if tag in groups[group]:
                    continue
                if seen >= limit:
                    dropped += 1
                    continue
                seen += 1
                groups[group].append(tag)
    if dropped:
        problems.append(
            ngettext(
                "A query has at most %(max)d tags; %(count)d more was ignored.",
                "A query has at most %(max)d tags; %(count)d more were ignored.",
                dropped,
            )
            % {"max": limit, "count": dropped}
        )
    sort = params.get("sort") or "title"  # empty: the default order
    if sort not in SORTS:
        problems.append(_("Unknown sort order; sorted by title instead."))
        sort = "title"
    page = 1
    raw_page = params.get("page", "1")
    if _PAGE.fullmatch(raw_page) and 1 <= int(raw_page) <= MAX_PAGE:
        page = int(raw_page)
    elif raw_page.isascii() and raw_page.isdigit():
        problems.append(
            _("There is no page %(page)s; showing page 1.") % {"page": shorten(raw_page)}
        )
    else:
        problems.append(
            _("“%(page)s” is not a page number; showing page 1.") % {"page": shorten(raw_page)}
        )
    shown = params.get("facets", "")
    if shown not in ("", "all"):
        problems.append(_("Unknown tag list choice; showing the most used tags."))
    query = Query(
        all_of=tuple(groups["all_of"]),
        any_of=tuple(groups["any_of"]),
        none_of=tuple(groups["none_of"]),
        sort=sort,
        page=page,
        all_facets=shown == "all",
    )
    # Each note once: a value repeated (600 times `all=%01`) is one mistake, not 600.
    return ParsedQuery(query=query, problems=list(dict.fromkeys(problems)))


def query_pairs(query: Query, **changes: object) -> list[tuple[str, object]]:
    """The URL parameters of `query` with `changes` (fields of Query), page 1 unless given."""
    values = {
        "all_of": query.all_of,
        "any_of": query.any_of,
        "none_of": query.none_of,
        "sort": query.sort,
        "page": 1,
        "all_facets": query.all_facets,
    }
    values.update(changes)
    pairs: list[tuple[str, object]] = []
    for param, group in GROUPS:
        pairs.extend((param, tag) for tag in values[group])  # type: ignore[attr-defined]
    if values["sort"] != "title":
        pairs.append(("sort", values["sort"]))
    if values["page"] != 1:
        pairs.append(("page", values["page"]))
    if values["all_facets"]:
        pairs.append(("facets", "all"))
    return pairs


def query_string(query: Query, **changes: object) -> str:
    """The URL query of `query` with `changes` (fields of Query), page 1 unless given."""
    pairs = query_pairs(query, **changes)
    return "?" + urlencode(pairs) if pairs else "?"


@dataclass(frozen=True)
class TagLink:
    """Links that add one tag to a group of a query (page 1), built without urlencode per tag:
    `link(tag)` equals `query_string(query, <group>=(*<group>, tag))`."""

    head: str
    tail: str

    @classmethod
    def adding_to(cls, query: Query, group: str) -> TagLink:
        """Links that add a tag to `group` ("all_of", "any_of" or "none_of") of `query`."""
        index = [g for _p, g in GROUPS].index(group)
        param = GROUPS[index][0]
        pairs = query_pairs(query)
        # Parameters come in the order all, any, not, then the rest: the new tag goes last
        # among its own group's tags.
        cut = sum(len(getattr(query, g)) for _p, g in GROUPS[: index + 1])
        before, after = urlencode(pairs[:cut]), urlencode(pairs[cut:])
        return cls(
            head=f"?{before}&{param}=" if before else f"?{param}=",
            tail=f"&{after}" if after else "",
        )

    def __call__(self, tag: str) -> str:
        return self.head + quote_plus(tag) + self.tail


class BookForm(forms.Form):
    """A book as staff type it; tags are one comma separated field."""

    title = forms.CharField(label=gettext_lazy("Title"), max_length=rules.MAX_TITLE)
    author = forms.CharField(
        label=gettext_lazy("Author(s)"),
        max_length=rules.MAX_AUTHOR,
        help_text=gettext_lazy("Several authors: separate them with commas."),
    )
    year = NumberField(
        label=gettext_lazy("Year"), min_value=rules.MIN_YEAR, max_value=rules.MAX_YEAR
    )
    description = forms.CharField(
        label=gettext_lazy("Description"),
        required=False,
        max_length=rules.MAX_DESCRIPTION,
        widget=forms.Textarea(attrs={"rows": 4}),
    )
    tags = forms.CharField(
        label=gettext_lazy("Tags"),
        required=False,
        max_length=(rules.MAX_TAG_LENGTH + 2) * rules.MAX_TAGS_PER_BOOK,
        help_text=gettext_lazy("Separate tags with commas, e.g. “ruby, web”."),
    )

    def clean_title(self) -> str:
        return self._one_line("title")

    def clean_author(self) -> str:
        return self._one_line("author")

    def _one_line(self, name: str) -> str:
        value = self.cleaned_data[name].strip()
        if rules.has_control_chars(value):
            raise forms.ValidationError(_("Use one line without control characters."))
        return value

    def clean_description(self) -> str:
        # Line ends as typed in a browser (CRLF) are kept as plain line breaks.
        value = self.cleaned_data["description"].replace("\r\n", "\n").replace("\r", "\n")
        if rules.has_hidden_chars(value):
            raise forms.ValidationError(rules.DESCRIPTION_HIDDEN)
        return value

    def clean_tags(self) -> list[str]:
        try:
            tags = rules.split_tags(self.cleaned_data["tags"])
        except InvalidBook as exc:
            raise forms.ValidationError(str(exc)) from exc
        if len(tags) > rules.MAX_TAGS_PER_BOOK:
            raise forms.ValidationError(
                _("A book has at most %(max)d tags.") % {"max": rules.MAX_TAGS_PER_BOOK}
            )
        return tags


class StampField(forms.RegexField):
    """A hidden id, version or token carried by a form (letters, digits, `_` and `-`)."""

    def __init__(self) -> None:
        super().__init__(regex=STAMP, widget=forms.HiddenInput)


class BookAddForm(BookForm):
    """A new book: its client-made id, and the form's own token (made with it, never the id),
    which lets this form, sent again, find the book it added, and no other form do so."""

    book_id = StampField()
    token = StampField()

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("token") and data.get("token") == data.get("book_id"):
            # A book loaded from a file or a script is recognised by its id as token: a form
            # naming that token would edit it without the edit page's checks.
            raise forms.ValidationError(_("This form is out of date; open it again."))
        return data


class BookEditForm(BookForm):
    version = forms.RegexField(regex=VERSION, widget=forms.HiddenInput)
    token = StampField()


class BookDeleteForm(forms.Form):
    version = forms.RegexField(regex=VERSION, widget=forms.HiddenInput)
