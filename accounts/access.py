"""Decorators for views that need a signed-in person or staff."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse

View = Callable[..., HttpResponse]


def login_redirect(request: HttpRequest) -> HttpResponseRedirect:
    """Send the visitor to the login page, coming back here afterwards."""
    query = urlencode({"next": request.get_full_path()})
    return HttpResponseRedirect(f"{reverse('accounts:login')}?{query}")


def login_required(view: View) -> View:
    """Anonymous visitors are sent to the login page with ?next=."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            return login_redirect(request)
        return view(request, *args, **kwargs)

    return wrapper


def staff_required(view: View) -> View:
    """Anonymous visitors go to the login page; signed-in non-staff get 403."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            return login_redirect(request)
        if not request.user.is_staff:
            return render(request, "403.html", status=403)
        return view(request, *args, **kwargs)

    return wrapper
