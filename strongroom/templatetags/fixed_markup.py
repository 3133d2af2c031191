"""`{% fixed "name" value ... %}...{% endfixed %}`: markup rendered once per language and values.

The fixed parts of a page (navigation, legends, pickers whose look depends on one choice, the
account page's sections and forms) are rendered the first time and then joined as a string,
like booking's pieces: the template engine walks them once per language and set of values, not
on every request. What is inside must depend on nothing but the language and the values named in
the tag, except its holes: `{% hole expression %}` (and every `{% csrf_token %}`) is kept as a
hole and filled on each request from that request's context, escaped as `{{ expression }}`
would be. So the person's name, an address or the CSRF token are never kept. With DEBUG on the
part is rendered every time (holes render as `{{ }}` does), so template edits show at once.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from django import template
from django.conf import settings
from django.template.base import FilterExpression, NodeList, Parser, Token, render_value_in_context
from django.template.defaulttags import CsrfTokenNode
from django.utils.safestring import mark_safe
from django.utils.translation import get_language

register = template.Library()

# Distinct (name, language, values) kept; beyond it the memory starts over (never reached by
# the site's own fragments: a few names, two languages, a handful of values each).
MAX_FRAGMENTS = 4096
# Off: every part rendered as it stands, as with DEBUG (tests compare the two).
KEEPING = True

Fill = Callable[[template.Context], str]
# A kept part: its text between holes, and what fills each hole (text, fill, text, ...).
Kept = tuple[Any, ...]
_fragments: dict[tuple[Any, ...], Kept] = {}
_lock = threading.Lock()


class _Marking:
    """While a part is rendered to be kept: the fills of the holes met so far (a hole renders
    as a marker naming its place in `fills`, in control characters no escaping changes)."""

    def __init__(self) -> None:
        self.fills: list[Fill] = []
        self.seen: set[int] = set()

    def mark(self, fill: Fill) -> str:
        self.fills.append(fill)
        return f"\x1e{len(self.fills) - 1}\x1f"


_marking: ContextVar[_Marking | None] = ContextVar("fixed_markup_marking", default=None)
_MARK = re.compile("\x1e([0-9]+)\x1f")
_CSRF_INPUT = '<input type="hidden" name="csrfmiddlewaretoken" value="{}">'


def _csrf_value(context: template.Context) -> str:
    return render_value_in_context(context.get("csrf_token"), context)


def _csrf_input(context: template.Context) -> str:
    return str(CsrfTokenNode().render(context))


class HoleNode(template.Node):
    def __init__(self, expression: FilterExpression, name: str | None = None) -> None:
        self.expression, self.name = expression, name

    def fill(self, context: template.Context) -> str:
        return render_value_in_context(self.expression.resolve(context), context)

    def render(self, context: template.Context) -> str:
        marking = _marking.get()
        if marking is None:
            text = self.fill(context) if self.name is None else self.expression.resolve(context)
        elif id(self) in marking.seen:
            # Twice in one kept part (a loop): one fill per node cannot tell the turns apart.
            raise template.TemplateSyntaxError("{% hole %} inside a loop of a {% fixed %} part")
        else:
            marking.seen.add(id(self))
            text = marking.mark(self.fill)
        if self.name is None:
            return text
        # `as name`: for a tag that renders the variable itself ({% blocktranslate %}).
        context[self.name] = text
        return ""


class FixedNode(template.Node):
    def __init__(self, name: FilterExpression, values: list[FilterExpression], body: NodeList):
        self.name, self.values, self.body = name, values, body

    def render(self, context: template.Context) -> str:
        if settings.DEBUG or not KEEPING or _marking.get() is not None:
            # Rendered as it stands (inside a part being kept, its holes are that part's).
            return self.body.render(context)
        key = (
            self.name.resolve(context),
            get_language(),
            *(value.resolve(context) for value in self.values),
        )
        kept = _fragments.get(key)
        if kept is None:
            kept = self._keep(context)
            with _lock:
                if len(_fragments) >= MAX_FRAGMENTS:
                    _fragments.clear()
                _fragments[key] = kept
        if len(kept) == 1:
            return kept[0]
        parts = [kept[0]]
        for at in range(1, len(kept), 2):
            parts.append(kept[at](context))
            parts.append(kept[at + 1])
        return mark_safe("".join(parts))  # noqa: S308 - rendered by the engine, holes escaped

    def _keep(self, context: template.Context) -> Kept:
        marking = _Marking()
        csrf = marking.mark(_csrf_value)
        token = _marking.set(marking)
        try:
            with context.push(csrf_token=csrf):
                text = str(self.body.render(context))
        finally:
            _marking.reset(token)
        # A whole {% csrf_token %} is one hole: it renders nothing where no token is provided.
        text = text.replace(_CSRF_INPUT.format(csrf), marking.mark(_csrf_input))
        pieces = _MARK.split(text)
        return tuple(
            marking.fills[int(piece)] if at % 2 else mark_safe(piece)  # noqa: S308 - rendered
            for at, piece in enumerate(pieces)
        )


@register.tag
def fixed(parser: Parser, token: Token) -> FixedNode:
    """`{% fixed "name" value ... %}` ... `{% endfixed %}`."""
    bits = token.split_contents()
    if len(bits) < 2:
        raise template.TemplateSyntaxError("{% fixed %} needs a name")
    body = parser.parse(("endfixed",))
    parser.delete_first_token()
    return FixedNode(
        parser.compile_filter(bits[1]), [parser.compile_filter(b) for b in bits[2:]], body
    )


@register.tag
def hole(parser: Parser, token: Token) -> HoleNode:
    """`{% hole expression %}`: `{{ expression }}`, filled on each request inside a kept part;
    `{% hole expression as name %}` sets `name` to it (for {% blocktranslate %})."""
    bits = token.split_contents()
    if len(bits) == 4 and bits[2] == "as":
        return HoleNode(parser.compile_filter(bits[1]), bits[3])
    if len(bits) != 2:
        raise template.TemplateSyntaxError("{% hole %} takes one expression (and `as name`)")
    return HoleNode(parser.compile_filter(bits[1]))
