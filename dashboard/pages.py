"""What every staff page shares: rendering under templates/dashboard/, the not-found page, the
rows of an audit table."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from dashboard.forms import detail_label, kind_label
from dashboard.selectors import LogEntry


def render_page(
    request: HttpRequest, template: str, context: dict[str, Any], status: int = 200
) -> HttpResponse:
    return render(request, f"dashboard/{template}", context, status=status)


def log_rows(entries: list[LogEntry]) -> list[tuple[LogEntry, Any, Any]]:
    """(entry, shown kind, shown detail) for the log table (which names the actors from the
    page's `names`, as every staff page does: dashboard/_owner.html)."""
    return [(e, kind_label(e.kind), detail_label(e.kind, e.detail)) for e in entries]


def not_found(request: HttpRequest, message: str) -> HttpResponse:
    return render_page(request, "not_found.html", {"message": message}, status=404)
