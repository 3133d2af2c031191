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


def _account_part(html: str) -> str:
    start = html.index('<div class="site-nav__account">')
    return html[start : html.index("</nav>", start)]


def test_the_kept_account_part_is_each_visitors_own_and_equals_a_fresh_render(
    buyer, second_buyer, client_for, settings, monkeypatch
) -> None:
    """The header's account part is kept per language and signed-in or not; the name, the
    language form's next address and the CSRF tokens are filled in on each request."""
    settings.DEBUG = False
    fixed_markup._fragments.clear()
    pages = {}
    for keeping in (True, False):
        monkeypatch.setattr(fixed_markup, "KEEPING", keeping)
        for who, visitor in (("a", client_for(buyer)), ("b", client_for(second_buyer)),
                             ("anonymous", Client())):  # fmt: skip
            for path in ("/", "/catalog/?all=web"):
                part = _account_part(visitor.get(path).content.decode())
                pages[keeping, who, path] = part.count("csrfmiddlewaretoken"), part
    assert any(key[0] == "account" for key in fixed_markup._fragments)
    for (_keeping, who, path), (tokens, part) in pages.items():
        assert tokens == (1 if who == "anonymous" else 2)  # (log out and) language
        fresh = pages[False, who, path][1]
        # The same markup but for the masked CSRF tokens, new on every answer.
        assert _unmasked(part) == _unmasked(fresh)
    a, b = pages[True, "a", "/"][1], pages[True, "b", "/"][1]
    assert buyer.person.display_name in a and second_buyer.person.display_name not in a
    assert second_buyer.person.display_name in b
    assert 'value="/catalog/?all=web"' in pages[True, "a", "/catalog/?all=web"][1]
    assert 'name="next" type="hidden" value="/"' in a


def _unmasked(part: str) -> str:
    import re

    return re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "TOKEN", part)
