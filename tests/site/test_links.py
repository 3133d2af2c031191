"""`{% link %}`: the same URL as `{% url %}` for a one-segment route, whatever the value."""

from __future__ import annotations

import pytest
from django.template import Context, Template
from django.urls import NoReverseMatch, reverse

from strongroom.templatetags.links import link


@pytest.mark.parametrize(
    "value", ["013-pqdkufsupsut5v4deebpj6hene", "a b", "é中", "x?y#z&<q>", "%41", "~:@!$'()*+,;="]
)
def test_a_link_is_what_reverse_makes(value: str) -> None:
    assert link("booking:done", value) == reverse("booking:done", args=[value])
    rendered = Template("{% load links %}{% link 'booking:done' v as u %}{{ u }}").render(
        Context({"v": value})
    )
    assert rendered == Template("{% url 'booking:done' v %}").render(Context({"v": value}))


@pytest.mark.parametrize("value", ["", "a/b"])
def test_what_the_route_refuses_is_refused_as_reverse_does(value: str) -> None:
    with pytest.raises(NoReverseMatch):
        link("booking:done", value)
