"""`{% fixed %}` fragments: rendered once per language and values, then reused."""

from __future__ import annotations

from django.template import Context, Template
from django.test import Client
from django.utils import translation

from strongroom.templatetags import fixed_markup

SOURCE = (
    "{% load i18n fixed_markup %}"
    '{% fixed "test-fragment" kind %}{% translate "Log in" %} {{ kind }} {{ counter.next }}'
    "{% endfixed %}"
)


class Counter:
    """Counts how often the fragment's body is rendered."""

    def __init__(self) -> None:
        self.n = 0

    def next(self) -> int:
        self.n += 1
        return self.n


def render(kind: str, counter: Counter, language: str) -> str:
    with translation.override(language):
        return Template(SOURCE).render(Context({"kind": kind, "counter": counter}))


def test_a_fixed_fragment_is_rendered_once_per_language_and_value(settings) -> None:
    settings.DEBUG = False
    fixed_markup._fragments.clear()
    counter = Counter()
    assert render("a", counter, "en") == "Log in a 1"
    assert render("a", counter, "en") == "Log in a 1"  # reused: the body did not run again
    assert render("b", counter, "en") == "Log in b 2"  # another value: rendered anew
    chinese = render("a", counter, "zh-hans")
    assert chinese.endswith(" a 3") and "Log in" not in chinese  # another language: its own
    assert counter.n == 3


def test_with_debug_on_a_fixed_fragment_is_rendered_every_time(settings) -> None:
    settings.DEBUG = True
    counter = Counter()
    render("a", counter, "en")
    render("a", counter, "en")
    assert counter.n == 2


def test_the_navigation_follows_who_is_signed_in(buyer, staff, client_for) -> None:
    """The fixed navigation is kept per kind of visitor: staff see the staff link, others not."""
    assert "/staff/" in client_for(staff).get("/").content.decode()
    assert "/staff/" not in client_for(buyer).get("/").content.decode()
    assert "/book/mine/" in client_for(buyer).get("/").content.decode()
    assert "/book/mine/" not in Client().get("/").content.decode()
