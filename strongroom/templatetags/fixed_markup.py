"""`{% fixed "name" value ... %}...{% endfixed %}`: markup rendered once per language and values.

The fixed parts of a page (navigation, legends, pickers whose look depends on one choice) are
rendered the first time and then joined as a string, like booking's pieces: the template engine
walks them once per language and set of values, not on every request. What is inside must
depend on nothing but the language and the values named in the tag (no CSRF token, no user
text); with DEBUG on it is rendered every time, so template edits show at once.
"""

from __future__ import annotations

import threading
from typing import Any

from django import template
from django.conf import settings
from django.template.base import FilterExpression, NodeList, Parser, Token
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import get_language

register = template.Library()

# Distinct (name, language, values) kept; beyond it the memory starts over (never reached by
# the site's own fragments: a few names, two languages, a handful of values each).
MAX_FRAGMENTS = 4096

_fragments: dict[tuple[Any, ...], SafeString] = {}
_lock = threading.Lock()


class FixedNode(template.Node):
    def __init__(self, name: FilterExpression, values: list[FilterExpression], body: NodeList):
        self.name, self.values, self.body = name, values, body

    def render(self, context: template.Context) -> str:
        if settings.DEBUG:
            return self.body.render(context)
        key = (
            self.name.resolve(context),
            get_language(),
            *(value.resolve(context) for value in self.values),
        )
        found = _fragments.get(key)
        if found is None:
            found = mark_safe(self.body.render(context))  # noqa: S308 - rendered by the engine
            with _lock:
                if len(_fragments) >= MAX_FRAGMENTS:
                    _fragments.clear()
                _fragments[key] = found
        return found


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
