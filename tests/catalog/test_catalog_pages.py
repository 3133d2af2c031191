"""The catalog pages: browsing with bad input, book pages, staff editing and its access."""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import pytest
import redis
from django.conf import LazySettings
from django.core.management import CommandError, call_command
from django.test import Client
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from catalog.demo import load_demo, read_books
from catalog.forms import TagLink, query_string
from catalog.selectors import Query, book_get, catalog_page, tags_with_counts
from strongroom.decoders import text_stream
from tests.catalog_support import add, assert_catalog_exact


@pytest.fixture
def shelf(r: redis.Redis) -> redis.Redis:
    add(r, "trpl", "The Ruby Programming Language", 2008, "ruby")
    add(r, "ror", "Ruby on Rails", 2006, "ruby", "web")
    add(r, "erl", "Programming Erlang", 2007, "erlang")
    add(r, "odd", "Odd Tags", 2020, "a:b", "机器学习")
    return r


def browse(params: list[tuple[str, str]] | str, **headers: Any) -> str:
    query = params if isinstance(params, str) else urlencode(params)
    response = Client().get(f"/catalog/?{query}", **headers)
    assert response.status_code == 200
    return response.content.decode()


def test_browse_combines_and_or_not_from_the_url(shelf: redis.Redis) -> None:
    page = browse([("any", "ruby"), ("any", "erlang"), ("not", "web")])
    assert "The Ruby Programming Language" in page and "Programming Erlang" in page
    assert "Ruby on Rails" not in page
    assert "2 books" in page


def test_facets_are_links_that_narrow_or_exclude(shelf: redis.Redis) -> None:
    page = browse([("all", "ruby")])
    assert 'href="?all=ruby&amp;all=web"' in page
    assert 'href="?all=ruby&amp;not=web"' in page
    assert 'class="facet__count">1<' in page


def test_unknown_tags_are_named_and_the_rest_of_the_query_still_runs(shelf: redis.Redis) -> None:
    page = browse([("all", "ruby"), ("any", "cobol"), ("any", "ruby"), ("not", "fortran")])
    assert "No book has the tag(s) “cobol”, “fortran”; they were left out" in page
    assert "Ruby on Rails" in page and "2 books" in page


@pytest.mark.parametrize(
    "params", [[("all", "ruby"), ("all", "cobol")], [("any", "cobol"), ("any", "fortran")]]
)
def test_a_required_tag_no_book_has_matches_nothing_and_can_be_removed(
    shelf: redis.Redis, params: list[tuple[str, str]]
) -> None:
    page = browse(params)
    assert "so no book matches this query" in page
    assert "Ruby on Rails" not in page
    assert "?" + params[0][0] + "=" + params[0][1] in page  # its chip's link without "cobol"


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ("all=" + ",".join(f"t{i}" for i in range(25)), "A query has at most 20 tags; 5 more"),
        ("all=a%0Ab", "is not a valid tag: A tag cannot contain line breaks"),
        ("all=" + "x" * 41, "A tag has at most 40 characters"),
        ("all=" + "x" * 1001, "A tag list longer than 1000 characters was ignored"),
        ("page=99", "Page 99 does not exist: this result has 1 page."),
        ("page=0", "There is no page 0; showing page 1."),
        ("page=%D9%A3", "is not a page number; showing page 1."),
        ("page=99999999999", "There is no page 99999999999; showing page 1."),
        ("sort=%7Bx%7D", "Unknown sort order; sorted by title instead."),
    ],
)
def test_bad_queries_get_a_clear_message_never_an_error(
    shelf: redis.Redis, params: str, message: str
) -> None:
    assert message in browse(params)


def test_a_bad_value_sent_many_times_is_named_once(shelf: redis.Redis) -> None:
    page = browse("&".join(["all=%01"] * 600))
    assert page.count("is not a valid tag") == 1


def test_a_full_width_tag_is_the_same_tag(shelf: redis.Redis) -> None:
    """A Chinese keyboard's full-width letters name the same tag, in a query and on a book."""
    from catalog.rules import split_tags

    assert "2 books" in browse([("all", "ＲＵＢＹ")])
    assert split_tags("ＲＵＢＹ, Ｗｅｂ") == ["ruby", "web"]  # the staff's book form


def test_hostile_tags_in_urls_are_just_tags(shelf: redis.Redis) -> None:
    page = browse([("all", "a:b")])
    assert "Odd Tags" in page and "1 book" in page
    page = browse([("all", "机器学习")])
    assert "Odd Tags" in page
    assert "Odd Tags" not in browse([("not", "{x}"), ("not", "*"), ("all", "a:b"), ("not", "a:b")])


def test_htmx_requests_get_only_the_results_region(shelf: redis.Redis) -> None:
    page = browse("all=ruby", HTTP_HX_REQUEST="true")
    assert page.lstrip().startswith('<div id="catalog"') and "<html" not in page
    assert "<html" in browse(
        "all=ruby", HTTP_HX_REQUEST="true", HTTP_HX_HISTORY_RESTORE_REQUEST="true"
    )


def test_the_page_and_its_htmx_region_are_cached_apart(shelf: redis.Redis) -> None:
    header_sets: tuple[dict[str, Any], ...] = ({}, {"HTTP_HX_REQUEST": "true"})
    for headers in header_sets:
        vary = Client().get("/catalog/?all=ruby", **headers)["Vary"]
        assert "HX-Request" in vary and "HX-History-Restore-Request" in vary


def test_the_browse_page_speaks_chinese(shelf: redis.Redis) -> None:
    client = Client()
    client.cookies["django_language"] = "zh-hans"
    page = client.get("/catalog/?all=cobol").content.decode()
    assert "书目" in page and "没有书带有标签" in page


def test_book_page_shows_tags_as_links(shelf: redis.Redis) -> None:
    page = Client().get("/catalog/book/ror/").content.decode()
    assert "Ruby on Rails" in page and 'href="/catalog/?all=web"' in page
    assert Client().get("/catalog/book/nope/").status_code == 404
    assert Client().get("/catalog/book/a:b%7B/").status_code == 404


STAFF_PAGES = [
    "/staff/catalog/books/",
    "/staff/catalog/books/add/",
    "/staff/catalog/books/ror/edit/",
    "/staff/catalog/books/ror/delete/",
]
STAFF_LIST_ONLY = {"/staff/catalog/books/"}  # a list: it takes no form


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("/catalog/staff/", "/staff/catalog/books/"),
        ("/catalog/staff/?page=2", "/staff/catalog/books/?page=2"),
        ("/catalog/staff/add/", "/staff/catalog/books/add/"),
        ("/catalog/staff/ror/edit/", "/staff/catalog/books/ror/edit/"),
        ("/catalog/staff/ror/delete/", "/staff/catalog/books/ror/delete/"),
    ],
)
def test_the_old_catalog_staff_addresses_redirect_for_good_to_the_staff_area(
    shelf: redis.Redis, old: str, new: str
) -> None:
    response = Client().get(old)
    assert response.status_code == 301 and response["Location"] == new


@pytest.mark.parametrize("url", STAFF_PAGES)
def test_staff_pages_send_visitors_to_login_and_refuse_buyers(
    shelf: redis.Redis, url: str, buyer: object, staff: object, client_for: Callable[..., Client]
) -> None:
    anonymous = Client().get(url)
    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/accounts/login/")
    assert client_for(buyer).get(url).status_code == 403
    # A form to an address that takes forms: refused to a buyer (403); to one that takes
    # none, refused to anyone (405, before the buyer is even asked about).
    posted = client_for(buyer).post(url, {"version": "1"})
    assert posted.status_code == (405 if url in STAFF_LIST_ONLY else 403)
    assert client_for(staff).get(url).status_code == 200
    assert book_get(client=shelf, book_id="ror") is not None


def form_of(response: object) -> dict[str, str]:
    """The initial values of a rendered book form (hidden fields included)."""
    form = response.context["form"]  # type: ignore[attr-defined]
    return {name: str(form[name].value() or "") for name in form.fields}


def test_staff_add_a_book_once_even_if_the_form_is_sent_twice(
    r: redis.Redis, staff: object, client_for: Callable[..., Client]
) -> None:
    client = client_for(staff)
    data = form_of(client.get("/staff/catalog/books/add/"))
    data |= {"title": "Programming Erlang", "author": "Joe Armstrong", "year": "2007",
             "tags": "Erlang, concurrency，机器学习"}  # fmt: skip
    first = client.post("/staff/catalog/books/add/", data)
    assert first.status_code == 302
    assert client.post("/staff/catalog/books/add/", data).status_code == 302
    assert dict(tags_with_counts(client=r)) == {"erlang": 1, "concurrency": 1, "机器学习": 1}
    assert catalog_page(client=r, query=Query()).total == 1
    assert "Programming Erlang" in client.get(first["Location"]).content.decode()


def test_the_add_form_cannot_overwrite_a_book_it_did_not_add(
    r: redis.Redis, staff: object, client_for: Callable[..., Client]
) -> None:
    """An Add form naming an existing book's id (loaded with its id as token, or added by
    another form) is refused and writes nothing: only its own form, sent again, may change
    what it added, and edits go through the edit page's checks."""
    from catalog.services import book_add
    from tests.booking_support import snapshot

    book_add(client=r, book_id="loaded-1", title="Kept", author="A", year=2000, tags=["x"])
    client = client_for(staff)
    other = form_of(client.get("/staff/catalog/books/add/"))
    other |= {"title": "Added", "author": "B", "year": "2001", "tags": "y"}
    assert client.post("/staff/catalog/books/add/", other).status_code == 302
    before = snapshot(r)
    hostile = form_of(client.get("/staff/catalog/books/add/"))
    hostile |= {"title": "OVERWRITTEN", "author": "x", "year": "2000", "tags": "zzz"}
    for target in ({"book_id": "loaded-1"}, {"book_id": "loaded-1", "token": "loaded-1"},
                   {"book_id": other["book_id"]}):  # fmt: skip
        page = client.post("/staff/catalog/books/add/", hostile | target)
        assert page.status_code == 200, target
        text = page.content.decode()
        assert "already used for another book" in text or "out of date" in text, target
    assert snapshot(r) == before


def test_a_description_keeps_its_lines_and_tabs(
    r: redis.Redis, staff: object, client_for: Callable[..., Client]
) -> None:
    client = client_for(staff)
    data = form_of(client.get("/staff/catalog/books/add/"))
    data |= {"title": "T", "author": "A", "year": "2000", "description": "one\r\n\ttwo"}
    assert client.post("/staff/catalog/books/add/", data).status_code == 302
    (book,) = catalog_page(client=r, query=Query()).books
    assert book.description == "one\n\ttwo"


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"tags": "ok, line\nbreak"}, "A tag cannot contain line breaks"),
        ({"tags": "x" * 41}, "A tag has at most 40 characters"),
        ({"tags": ", ".join(f"t{i}" for i in range(21))}, "A book has at most 20 tags"),
        ({"year": "1700"}, "greater than or equal to 1800"),
        ({"year": "２０２０"}, "Year must be a number from 1800 to"),
        ({"title": "two\nlines"}, "Use one line"),
        ({"title": ""}, "This field is required"),
        ({"book_id": "a:b"}, "This form is out of date"),
        ({"description": "a\x07b"}, "no other control characters"),
        ({"description": "\u202egnp.exe"}, "no other control characters"),
    ],
)
def test_staff_add_refuses_bad_input_and_writes_nothing(
    r: redis.Redis,
    staff: object,
    client_for: Callable[..., Client],
    change: dict[str, str],
    error: str,
) -> None:
    client = client_for(staff)
    data = form_of(client.get("/staff/catalog/books/add/"))
    data |= {"title": "T", "author": "A", "year": "2000", "tags": "x"} | change
    response = client.post("/staff/catalog/books/add/", data)
    assert response.status_code == 200
    assert error in response.content.decode()
    assert catalog_page(client=r, query=Query()).total == 0


def test_staff_edit_changes_tags_and_refuses_a_stale_form(
    shelf: redis.Redis, staff: object, client_for: Callable[..., Client]
) -> None:
    client = client_for(staff)
    data = form_of(client.get("/staff/catalog/books/ror/edit/"))
    assert data["tags"] == "ruby, web"
    stale = dict(data)
    assert (
        client.post("/staff/catalog/books/ror/edit/", data | {"tags": "ruby, rails"}).status_code
        == 302
    )
    response = client.post(
        "/staff/catalog/books/ror/edit/", stale | {"token": "other", "tags": "perl"}
    )
    assert "Someone changed this book" in response.content.decode()
    assert book_get(client=shelf, book_id="ror").tags == ("ruby", "rails")  # type: ignore[union-attr]
    assert "web" not in dict(tags_with_counts(client=shelf))
    assert_catalog_exact(shelf)


def test_staff_delete_takes_the_book_out_of_every_tag(
    shelf: redis.Redis, staff: object, client_for: Callable[..., Client]
) -> None:
    client = client_for(staff)
    version = form_of(client.get("/staff/catalog/books/erl/delete/"))["version"]
    response = client.post("/staff/catalog/books/erl/delete/", {"version": version})
    assert response.status_code == 302 and response["Location"] == "/staff/catalog/books/"
    assert book_get(client=shelf, book_id="erl") is None
    assert "erlang" not in dict(tags_with_counts(client=shelf))
    assert client.post("/staff/catalog/books/erl/delete/", {"version": version}).status_code == 302
    assert_catalog_exact(shelf)


def test_demo_data_is_real_books_loaded_once(r: redis.Redis) -> None:
    books = read_books()
    assert len(books) >= 300
    assert len({(b.title, b.year) for b in books}) == len(books)
    assert load_demo(r)[0].startswith(f"{len(books)} of {len(books)}")
    assert load_demo(r)[0].startswith(f"0 of {len(books)}")
    assert catalog_page(client=r, query=Query()).total == len(books)
    found = {
        b.title: b.tags
        for b in catalog_page(client=r, query=Query(any_of=("ruby", "erlang")), page_size=100).books
    }
    assert found["The Ruby Programming Language"] == ("ruby",)
    assert set(found["Ruby on Rails: Up and Running"]) == {"ruby", "web"}
    assert "erlang" in found["Programming Erlang: Software for a Concurrent World"]
    assert_catalog_exact(r)


def test_loadbooks_adds_a_file_once_and_refuses_a_bad_one(r: redis.Redis, tmp_path) -> None:
    good = tmp_path / "books.psv"
    good.write_text("# two books\nA Book | An Author | 1999 | x, y\nB Book | B Author | 2001 | y\n")
    out = io.StringIO()
    call_command("loadbooks", str(good), stdout=out)
    call_command("loadbooks", str(good), stdout=out)
    assert out.getvalue().splitlines() == ["2 of 2 books added", "0 of 2 books added"]
    bad = tmp_path / "bad.psv"
    bad.write_text("C Book | C Author | 2001 | z\nD Book | D Author | 1066 | z\n")
    with pytest.raises(CommandError, match="The year is between 1800 and 2100"):
        call_command("loadbooks", str(bad))
    with pytest.raises(CommandError, match="expected 4 or 5 fields"):
        (tmp_path / "short.psv").write_text("Only a title\n")
        call_command("loadbooks", str(tmp_path / "short.psv"))
    assert dict(tags_with_counts(client=r)) == {"y": 2, "x": 1}


def test_staff_edits_of_the_catalog_reach_the_audit_log(
    shelf: redis.Redis, staff: object, client_for: Callable[..., Client]
) -> None:
    from strongroom.keyspace import STAFF_AUDIT

    client = client_for(staff)
    added = form_of(client.get("/staff/catalog/books/add/"))
    added |= {"title": "Redis in Action", "author": "Josiah L. Carlson", "year": "2013"}
    assert client.post("/staff/catalog/books/add/", added | {"tags": "redis"}).status_code == 302
    client.post("/staff/catalog/books/add/", added | {"tags": "redis"})  # resent: added once
    edit = form_of(client.get("/staff/catalog/books/ror/edit/"))
    assert client.post("/staff/catalog/books/ror/edit/", edit | {"tags": "ruby"}).status_code == 302
    version = form_of(client.get("/staff/catalog/books/erl/delete/"))["version"]
    client.post("/staff/catalog/books/erl/delete/", {"version": version})
    client.post("/staff/catalog/books/erl/delete/", {"version": version})  # already gone: no entry
    entries = [fields for _id, fields in text_stream(shelf.xrange(STAFF_AUDIT.key()))]
    assert [(e["kind"], e["subject"], e["actor"]) for e in entries] == [
        ("book_add", added["book_id"], str(staff.id)),  # type: ignore[attr-defined]
        ("book_edit", "ror", str(staff.id)),  # type: ignore[attr-defined]
        ("book_delete", "erl", str(staff.id)),  # type: ignore[attr-defined]
    ]
    log = client.get("/staff/audit/?kind=book_edit").content.decode()
    assert 'data-kind="book_edit"' in log and 'data-kind="book_add"' not in log


HOSTILE = st.text(st.characters(codec="utf-8"), min_size=1, max_size=12)


@hypothesis_settings(max_examples=200, deadline=None)
@given(
    query=st.builds(
        Query,
        all_of=st.lists(HOSTILE, max_size=3).map(tuple),
        any_of=st.lists(HOSTILE, max_size=3).map(tuple),
        none_of=st.lists(HOSTILE, max_size=3).map(tuple),
        sort=st.sampled_from(["title", "year", "-year"]),
        page=st.integers(min_value=1, max_value=3),
        all_facets=st.booleans(),
    ),
    tag=HOSTILE,
    group=st.sampled_from(["all_of", "any_of", "none_of"]),
)
def test_facet_links_equal_the_query_string_of_the_narrowed_query(
    query: Query, tag: str, group: str
) -> None:
    link = TagLink.adding_to(query, group)
    assert link(tag) == query_string(query, **{group: (*getattr(query, group), tag)})


def test_the_page_lists_the_biggest_facets_and_links_to_the_rest(
    r: redis.Redis, settings: LazySettings
) -> None:
    for i in range(12):
        add(r, f"b{i}", f"Book {i}", 2000, "all", *(f"t{j}" for j in range(i + 1)))
    settings.CATALOG_FACETS_SHOWN = 4
    page = browse("all=all&any=t0&any=t11")
    listed = re.findall(r'class="facet__tag"[^>]*>([^<]+)<', page)
    # The four biggest counts (t0..t3: 12, 11, 10, 9 books), then the query's own t11.
    assert listed == ["t0", "t1", "t2", "t3", "t11"]
    assert "7 more tags" in page and 'href="?all=all&amp;any=t0&amp;any=t11&amp;facets=all"' in page
    page = browse("all=all&any=t0&any=t11&facets=all")
    listed = re.findall(r'class="facet__tag"[^>]*>([^<]+)<', page)
    assert listed == [f"t{j}" for j in range(12)]
    assert "more tags" not in page and "Fewer tags" in page
    assert 'href="?all=all&amp;any=t0&amp;any=t11&amp;all=t5&amp;facets=all"' not in page
    assert 'href="?all=all&amp;all=t5&amp;any=t0&amp;any=t11&amp;facets=all"' in page


def test_an_odd_facets_choice_gets_a_message(shelf: redis.Redis) -> None:
    assert "Unknown tag list choice" in browse("all=ruby&facets=%7Bx%7D")


def test_tags_with_markup_are_escaped_in_facets_and_book_tags(r: redis.Redis) -> None:
    add(r, "m", "Markup", 2000, "html", "<i>&\"x'")
    page = browse([("all", "html")])
    assert "<i>&" not in page
    shown = "&lt;i&gt;&amp;&quot;x&#x27;"
    assert (
        f'class="facet__tag" href="?all=html&amp;all=%3Ci%3E%26%22x%27" rel="nofollow">{shown}<'
        in page
    )
    assert f'>not<span class="visually-hidden"> {shown}</span></a>' in page
    assert (
        f'<a class="tag" href="?all=html&amp;all=%3Ci%3E%26%22x%27" rel="nofollow">{shown}</a>'
        in page
    )


def test_past_the_last_page_previous_leads_to_the_last_page(shelf: redis.Redis) -> None:
    page = browse("page=99")
    assert '<a class="button" href="?" rel="prev">' in page  # page 1: no page in the address
    assert "Page 99 of" not in page  # the page that is not there is not named as shown


def test_a_tag_both_required_and_excluded_is_named(shelf: redis.Redis) -> None:
    """?all=ruby&not=ruby said only "No books match"."""
    page = browse("all=ruby&not=ruby")
    assert "The tag(s) “ruby” are both required and excluded, so no book can match." in page


def test_an_empty_sort_is_the_default_order(shelf: redis.Redis) -> None:
    page = browse("all=ruby&sort=")
    assert "Unknown sort order" not in page and "2 books" in page
    assert "Unknown sort order" in browse("all=ruby&sort=price")


def test_one_tag_over_the_limit_is_said_in_the_singular(shelf: redis.Redis) -> None:
    over = ",".join(["ruby", *(f"x{n}" for n in range(20))])
    assert "20 tags; 1 more was ignored." in browse(f"any={over}")
    assert "20 tags; 2 more were ignored." in browse(f"any={over},x20")


def test_tags_left_out_of_the_query_are_left_out_of_its_links(shelf: redis.Redis) -> None:
    """Unknown "not" tags were said to be left out, yet every link (and, with htmx, the
    address) still carried them, and "Clear all tags" showed with no tag shown."""
    page = browse("all=ruby&not=nosuch&sort=-year")
    assert "“nosuch”; they were left out of the query" in page
    assert "nosuch" not in "".join(re.findall(r'href="([^"]*)"', page))
    assert 'value="nosuch"' not in page
    alone = browse("not=nosuch")
    assert "Clear all tags" not in alone
    partial = Client().get("/catalog/?all=ruby&any=&not=nosuch&sort=-year", HTTP_HX_REQUEST="true")
    assert partial["HX-Push-Url"] == "/catalog/?all=ruby&sort=-year"


def test_clear_all_tags_keeps_the_sort_order(shelf: redis.Redis) -> None:
    page = browse("all=ruby&sort=-year")
    clear = re.search(r'<a href="([^"]*)">Clear all tags</a>', page)
    assert clear and clear.group(1) == "/catalog/?sort=-year"
