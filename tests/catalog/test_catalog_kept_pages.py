"""A worker keeps the result pages it computed while the catalog's edition stays the same:
a visitor's repeated query costs one GET, and every write of the catalog shows at once."""

from __future__ import annotations

import redis
from django.test import Client

from catalog.selectors import KEPT_PAGES
from catalog.services import book_delete, book_edit, book_tags_fill
from strongroom import keyspace
from strongroom.store import round_trips
from tests.catalog_support import add
from tests.store_support import commands_run, stats_reset


def browse(query: str) -> str:
    response = Client().get(f"/catalog/?{query}")
    assert response.status_code == 200
    return response.content.decode()


def shelf(r: redis.Redis) -> None:
    KEPT_PAGES.clear()
    add(r, "ror", "Ruby on Rails", 2006, "ruby", "web")
    add(r, "trpl", "The Ruby Programming Language", 2008, "ruby")


def test_a_repeated_query_is_one_read_and_runs_no_query_on_the_server(r: redis.Redis) -> None:
    shelf(r)
    with round_trips() as first:
        browse("all=ruby")
    stats_reset(r)
    with round_trips() as again:
        page = browse("all=ruby")
    assert "Ruby on Rails" in page and "2 books" in page
    assert (first.count, again.count) == (2, 1)
    assert "fcall_ro" not in commands_run(r)  # on no primary


def test_adding_editing_and_deleting_a_book_show_on_the_next_page(r: redis.Redis) -> None:
    shelf(r)
    assert "2 books" in browse("all=ruby")
    add(r, "rbp", "Ruby Best Practices", 2009, "ruby")
    assert "Ruby Best Practices" in browse("all=ruby") and "3 books" in browse("all=ruby")
    book_edit(
        client=r, book_id="rbp", expected_version="1", token="t-edit", title="Ruby Worst Practices",
        author="A. Writer", year=2009, description="", tags=["ruby"],
    )  # fmt: skip
    assert "Ruby Worst Practices" in browse("all=ruby")
    assert book_delete(client=r, book_id="rbp")
    page = browse("all=ruby")
    assert "Ruby Worst Practices" not in page and "2 books" in page


def test_a_flushed_store_keeps_nothing(r: redis.Redis) -> None:
    shelf(r)
    assert "Ruby on Rails" in browse("all=ruby")
    r.flushall()
    assert "Ruby on Rails" not in browse("all=ruby")
    assert not r.exists(keyspace.CATALOG_EDITION.key())


def test_refilling_the_book_tags_hash_sets_a_new_edition(r: redis.Redis) -> None:
    shelf(r)
    browse("all=ruby")
    edition = r.get(keyspace.CATALOG_EDITION.key())
    r.hdel(keyspace.CATALOG_BOOK_TAGS.key(), "ror")
    assert book_tags_fill(client=r) > 0
    assert r.get(keyspace.CATALOG_EDITION.key()) not in (None, edition)
