"""What every staff page shares: rendering under templates/dashboard/, the not-found page, the
rows of an audit table."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from dashboard.forms import detail_label, kind_label
from dashboard.selectors import LogEntry
from dashboard.templatetags.dashboard_tags import name_of


def render_page(
    request: HttpRequest, template: str, context: dict[str, Any], status: int = 200
) -> HttpResponse:
    return render(request, f"dashboard/{template}", context, status=status)


def log_rows(
    entries: list[LogEntry], names: dict[int, str]
) -> list[tuple[LogEntry, Any, str, Any]]:
    """(entry, shown kind, actor's name or '', shown detail) for the log table."""
    return [
        (e, kind_label(e.kind), name_of(names, e.actor), detail_label(e.kind, e.detail))
        for e in entries
    ]


def not_found(request: HttpRequest, message: str) -> HttpResponse:
    return render_page(request, "not_found.html", {"message": message}, status=404)
