"""Catalog pages: browse (anyone), book detail (anyone), and staff editing."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.cache import patch_vary_headers
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_http_methods, require_safe

from accounts.access import signed_in_person, staff_required
from catalog import forms, services
from catalog.rules import Book, InvalidBook
from catalog.selectors import (
    Facet,
    ResultPage,
    book_get,
    catalog_page,
    edition_read,
    result_page,
)
from strongroom.ahead import reads_ahead
from strongroom.compression import compressible
from strongroom.store import get_reader, get_store

# The two long lists of a result page (up to 30 facets, ~100 tags of its books) are built here
# rather than in template loops: a page renders in a fraction of the time. Every value is
# escaped; the template inserts the finished list items. A tag's name and links are escaped
# once per page (`TagItems`), however many books and facets show it.


class TagItems:
    """The list items of one result page's tags, each built and escaped once per tag."""

    def __init__(
        self,
        *,
        narrow: Callable[[str], str],
        exclude: Callable[[str], str],
        required: set[str],
    ) -> None:
        self._narrow, self._exclude, self._required = narrow, exclude, required
        self._book_items: dict[str, str] = {}
        self._not_label = escape(_("not"))

    def book_item(self, tag: str) -> str:
        """A book's tag: a link that requires it, plain when the query requires it already."""
        item = self._book_items.get(tag)
        if item is None:
            if tag in self._required:
                item = f'<li><span class="tag tag--on">{escape(tag)}</span></li>'
            else:
                item = (
                    f'<li><a class="tag" href="{escape(self._narrow(tag))}" rel="nofollow">'
                    f"{escape(tag)}</a></li>"
                )
            self._book_items[tag] = item
        return item

    def facet_item(self, facet: Facet) -> str:
        """A facet: the tag (a link that requires it), its count, a "not" link."""
        tag = escape(facet.tag)
        count = f"{facet.count}+" if facet.capped else str(facet.count)
        if facet.estimated:
            count = f"≈{count}"
        return (
            f'<li class="facet"><a class="facet__tag" href="{escape(self._narrow(facet.tag))}" '
            f'rel="nofollow">{tag}</a> <span class="facet__count">{count}</span> '
            f'<a class="facet__exclude" href="{escape(self._exclude(facet.tag))}" '
            # The name a screen reader says starts with the word shown ("not web"), so that
            # a voice command naming the visible "not" finds the link.
            f'rel="nofollow">{self._not_label}<span class="visually-hidden"> {tag}</span></a></li>'
        )


def facets_html(facets: list[Facet], *, items: TagItems) -> SafeString:
    """The facets' list items (each tag appears once among them)."""
    return mark_safe("\n".join(items.facet_item(facet) for facet in facets))  # noqa: S308 - escaped


def tags_html(tags: tuple[str, ...], *, items: TagItems) -> SafeString:
    """A book's tags as list items, from the page's per-tag items."""
    return mark_safe("".join(items.book_item(tag) for tag in tags))  # noqa: S308 - escaped


def shown_facets(result: ResultPage) -> tuple[list[Facet], int]:
    """The facets a result page lists, and how many more a "more tags" link would add.

    Tags the query requires or excludes are left out (they are chips above). The page lists
    the `CATALOG_FACETS_SHOWN` biggest counts plus the query's own "any of" tags, or every
    counted facet when the query asks for all (`?facets=all`).
    """
    query = result.query
    left_out = {*query.all_of, *query.none_of}
    candidates = [facet for facet in result.facets if facet.tag not in left_out]
    if query.all_facets:
        return candidates, 0
    limit = settings.CATALOG_FACETS_SHOWN
    own = set(query.any_of)
    shown = [facet for i, facet in enumerate(candidates) if i < limit or facet.tag in own]
    return shown, len(candidates) - len(shown)


def about(count: int) -> str:
    """An estimated count as people read one: two significant digits, grouped (53,890 -> 54,000)."""
    digits = max(0, len(str(count)) - 2)
    return f"{round(count, -digits):,}"


def _quoted(tags: list[str]) -> str:
    return ", ".join(f"“{forms.shorten(tag)}”" for tag in tags)


def _without(tags: tuple[str, ...], left_out: list[str]) -> tuple[str, ...]:
    return tuple(tag for tag in tags if tag not in left_out)


def browse_context(result: ResultPage, problems: list[str]) -> dict[str, Any]:
    """What the browse templates show: the result, its facets as links, pages and messages."""
    asked = result.query
    notes = list(problems)
    # A tag no book has matches nothing: required (or every "any of" tag), nothing matches;
    # else it changes nothing and is left out, of the query and of every link made from it.
    emptied = {*asked.all_of, *(asked.any_of if set(asked.any_of) <= set(result.unknown) else ())}
    required = [tag for tag in result.unknown if tag in emptied]
    left_out = [tag for tag in result.unknown if tag not in emptied]
    query = replace(
        asked,
        all_of=_without(asked.all_of, left_out),
        any_of=_without(asked.any_of, left_out),
        none_of=_without(asked.none_of, left_out),
    )
    if both := [tag for tag in asked.all_of if tag in asked.none_of]:
        notes.append(
            _("The tag(s) %(tags)s are both required and excluded, so no book can match.")
            % {"tags": _quoted(both)}
        )
    if required:
        notes.append(
            _("No book has the tag(s) %(tags)s, so no book matches this query.")
            % {"tags": _quoted(required)}
        )
    if left_out:
        notes.append(
            _("No book has the tag(s) %(tags)s; they were left out of the query.")
            % {"tags": _quoted(left_out)}
        )
    if result.page_out_of_range and result.total:
        notes.append(
            ngettext(
                "Page %(page)d does not exist: this result has %(pages)d page.",
                "Page %(page)d does not exist: this result has %(pages)d pages.",
                result.pages,
            )
            % {"page": query.page, "pages": result.pages}
        )
    # A tag that emptied the result stays listed: removing it is the way out.
    known = query.tags
    chosen = [
        {"tag": tag, "kind": kind, "remove_url": forms.query_string(query, **{group: rest})}
        for kind, group, tags in (
            ("all", "all_of", query.all_of),
            ("any", "any_of", query.any_of),
            ("not", "none_of", query.none_of),
        )
        for tag in tags
        if tag in known
        for rest in [tuple(t for t in tags if t != tag)]
    ]
    facets, hidden = shown_facets(result)
    items = TagItems(
        narrow=forms.TagLink.adding_to(query, "all_of"),
        exclude=forms.TagLink.adding_to(query, "none_of"),
        required=set(query.all_of),
    )
    book_url = reverse("catalog:book_detail", args=["-"])[:-2]
    facet_list = facets_html(facets, items=items)
    books = [
        {
            "title": book.title,
            "url": f"{book_url}{book.id}/",
            "meta": f"{book.author} · {book.year}",
            "tags": tags_html(book.tags, items=items),
        }
        for book in result.books
    ]
    page = query.page
    return {
        "books": books,
        "result": result,
        "query": query,
        "notes": notes,
        "chosen": chosen,
        "facets": facet_list,
        "hidden_facets": hidden,
        "more_facets_url": forms.query_string(query, all_facets=True, page=page) if hidden else "",
        "fewer_facets_url": (
            forms.query_string(query, all_facets=False, page=page)
            if query.all_facets and len(facets) > settings.CATALOG_FACETS_SHOWN
            else ""
        ),
        "form_values": {
            "all": ", ".join(query.all_of),
            "any": ", ".join(query.any_of),
            "not": ", ".join(query.none_of),
        },
        "sorts": [
            {"value": value, "label": label, "url": forms.query_string(query, sort=value)}
            for value, label in (
                ("title", _("Title")),
                ("year", _("Oldest first")),
                ("-year", _("Newest first")),
            )
        ],
        "total_about": about(result.total),
        "first": (page - 1) * result.page_size + 1,
        "last": (page - 1) * result.page_size + len(result.books),
        # Past the last page, "previous" leads to the last one.
        "prev_url": forms.query_string(query, page=min(page - 1, result.pages))
        if page > 1 and result.pages
        else "",
        "next_url": forms.query_string(query, page=page + 1) if page < result.pages else "",
        "last_page_url": forms.query_string(query, page=result.pages),
        "clear_url": forms.query_string(query, all_of=(), any_of=(), none_of=()),
        # This page's own address, without empty fields or tags left out (htmx pushes it).
        "clean_url": forms.query_string(query, page=page),
    }


@compressible
@require_safe
@reads_ahead(lambda request: edition_read())
def browse(request: HttpRequest) -> HttpResponse:
    """The catalog: AND / OR / NOT tag filters, sorted, paged, with facet counts."""
    parsed = forms.browse_query_parse(request.GET)
    result = result_page(client=get_reader(), query=parsed.query)
    context = browse_context(result, parsed.problems)
    partial = request.htmx and not request.htmx.history_restore_request  # type: ignore[attr-defined]
    template = "catalog/_region.html" if partial else "catalog/browse.html"
    response = render(request, template, context)
    if partial:
        response["HX-Push-Url"] = reverse("catalog:browse") + context["clean_url"].rstrip("?")
    # One URL, two bodies (the page, or its results region for htmx): a cache (the browser's
    # back button included) must keep them apart.
    patch_vary_headers(response, ("HX-Request", "HX-History-Restore-Request"))
    return response


def get_book_or_404(book_id: str) -> Book:
    if not forms.BOOK_ID.fullmatch(book_id):
        raise Http404(_("No such book."))
    book = book_get(client=get_reader(), book_id=book_id)
    if book is None:
        raise Http404(_("No such book."))
    return book


@require_safe
def book_detail(request: HttpRequest, book_id: str) -> HttpResponse:
    """One book with its tags as links to the books that share them."""
    book = get_book_or_404(book_id)
    tags = [
        {"tag": tag, "url": forms.query_string(forms.Query(all_of=(tag,)))} for tag in book.tags
    ]
    return render(request, "catalog/book.html", {"book": book, "tags": tags})


@staff_required
@require_safe
def staff_list(request: HttpRequest) -> HttpResponse:
    """Staff: every book (filterable like the browse page) with edit and delete links."""
    parsed = forms.browse_query_parse(request.GET)
    result = catalog_page(client=get_store(), query=parsed.query, page_size=50)
    return render(request, "catalog/staff_list.html", browse_context(result, parsed.problems))


def initial_of(book: Book) -> dict[str, object]:
    return {
        "title": book.title,
        "author": book.author,
        "year": book.year,
        "description": book.description,
        "tags": ", ".join(book.tags),
    }


@staff_required
@require_http_methods(["GET", "HEAD", "POST"])
def book_add(request: HttpRequest) -> HttpResponse:
    """Staff: add a book. The form carries a client-made id, so a resent form adds it once."""
    if request.method == "POST":
        form = forms.BookAddForm(request.POST)
        if form.is_valid():
            data = form.cleaned_data
            try:
                services.book_add(
                    client=get_store(), book_id=data["book_id"], title=data["title"],
                    author=data["author"], year=data["year"], description=data["description"],
                    tags=data["tags"], token=data["token"],
                    audit_actor=str(signed_in_person(request).id),
                )  # fmt: skip
            except InvalidBook as exc:
                form.add_error(None, str(exc))
            except services.BookExists:
                form.add_error(None, _("This form was already used for another book."))
            else:
                messages.success(request, _("“%(title)s” was added.") % {"title": data["title"]})
                return HttpResponseRedirect(reverse("catalog:book_detail", args=[data["book_id"]]))
    else:
        form = forms.BookAddForm(
            initial={"book_id": services.new_book_id(), "token": services.new_book_id()}
        )
    return render(request, "catalog/book_form.html", {"form": form, "adding": True})


@staff_required
@require_http_methods(["GET", "HEAD", "POST"])
def book_edit(request: HttpRequest, book_id: str) -> HttpResponse:
    """Staff: change a book and its tags, refused if someone else changed it meanwhile."""
    book = get_book_or_404(book_id)
    if request.method == "POST":
        form = forms.BookEditForm(request.POST)
        if form.is_valid():
            data = form.cleaned_data
            try:
                services.book_edit(
                    client=get_store(), book_id=book_id, expected_version=data["version"],
                    token=data["token"], title=data["title"], author=data["author"],
                    year=data["year"], description=data["description"], tags=data["tags"],
                    audit_actor=str(signed_in_person(request).id),
                )  # fmt: skip
            except InvalidBook as exc:
                form.add_error(None, str(exc))
            except services.BookStale:
                form.add_error(
                    None,
                    _(
                        "Someone changed this book while you were editing it. Nothing was "
                        "saved: open the book again to see the current version."
                    ),
                )
            except services.BookMissing as exc:
                raise Http404(_("No such book.")) from exc
            else:
                messages.success(request, _("“%(title)s” was saved.") % {"title": data["title"]})
                return HttpResponseRedirect(reverse("catalog:book_detail", args=[book_id]))
    else:
        form = forms.BookEditForm(
            initial={**initial_of(book), "version": book.version, "token": services.new_book_id()}
        )
    return render(request, "catalog/book_form.html", {"form": form, "book": book})


@staff_required
@require_http_methods(["GET", "HEAD", "POST"])
def book_delete(request: HttpRequest, book_id: str) -> HttpResponse:
    """Staff: confirm, then delete a book and take it out of every tag."""
    if request.method == "POST":
        form = forms.BookDeleteForm(request.POST)
        if not forms.BOOK_ID.fullmatch(book_id) or not form.is_valid():
            raise Http404(_("No such book."))
        try:
            deleted = services.book_delete(
                client=get_store(),
                book_id=book_id,
                expected_version=form.cleaned_data["version"],
                audit_actor=str(signed_in_person(request).id),
            )
        except services.BookStale:
            messages.error(request, _("Someone changed this book meanwhile; it was not deleted."))
            return HttpResponseRedirect(reverse("catalog:book_detail", args=[book_id]))
        if deleted:
            messages.success(request, _("The book was deleted."))
        else:
            messages.info(request, _("The book was already deleted."))
        return HttpResponseRedirect(reverse("catalog_staff:books"))
    book = get_book_or_404(book_id)
    form = forms.BookDeleteForm(initial={"version": book.version})
    return render(request, "catalog/book_delete.html", {"form": form, "book": book})
