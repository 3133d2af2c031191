"""The HTTP methods a view takes, read from the view itself: Django's method decorators
(`require_POST`, `require_GET`, `require_http_methods`) keep the methods they allow in their
closure, and a class-based view answers the methods it has a handler for. None when the view
says nothing (it takes every method)."""

from __future__ import annotations

from typing import Any

from django.urls import Resolver404, resolve


def view_methods(view: Any) -> frozenset[str] | None:
    """The methods `view` (a URL pattern's callback) answers, upper case; None for any."""
    view_class = getattr(view, "view_class", None)
    if view_class is not None:
        names = getattr(view_class, "http_method_names", ())
        return frozenset(name.upper() for name in names if hasattr(view_class, name))
    while view is not None:
        code = getattr(view, "__code__", None)
        if code is not None and "request_method_list" in code.co_freevars:
            cell = view.__closure__[code.co_freevars.index("request_method_list")]
            return frozenset(cell.cell_contents)
        view = getattr(view, "__wrapped__", None)
    return None


def takes_get(path: str) -> bool:
    """Whether the view at `path` answers a GET: a page shown in answer to a form (a refused
    booking, a closure's second step) sits at an address that takes only forms, and coming
    back there would be a 405."""
    try:
        view = resolve(path).func
    except Resolver404:
        return True  # its own 404 says so
    methods = view_methods(view)
    return methods is None or "GET" in methods
