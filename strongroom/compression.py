"""Compressed HTML, without a BREACH-style leak.

BREACH guesses a secret on a page, byte by byte, from the compressed size of pages that also
reflect the attacker's input. So nothing is compressed unless its view says, with
`@compressible`, that the answer carries no secret: no pickup code, no reset or verify token,
no subscription address. The one secret every page carries is the CSRF token (the forms, the
htmx header in base.html), and Django masks it afresh on every response (`get_token()` returns
the cookie's secret XOR a new random mask each time), so there is no constant string to guess;
the gzip answers also carry Django's random filler (`compress_string(max_random_bytes=...)`).
Static files are whitenoise's, compressed ahead of time.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any, TypeVar

import brotli  # type: ignore[import-untyped]  # no stubs; whitenoise[brotli] installs it
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.utils.cache import patch_vary_headers
from django.utils.text import compress_string

View = TypeVar("View", bound=Callable[..., HttpResponseBase])

# Brotli's quality 4 costs about what gzip's level 6 does and makes smaller answers.
BROTLI_QUALITY = 4
GZIP_RANDOM_BYTES = 100
MIN_LENGTH = 200  # smaller answers gain nothing (headers alone are larger)
_ACCEPTS = re.compile(r"(?:^|,)\s*(br|gzip)\s*(?=,|;|$)", re.IGNORECASE)


def compressible(view: View) -> View:
    """Mark the view's answers as free of secrets (beyond the masked CSRF token)."""

    @functools.wraps(view)
    def marked(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        response = view(request, *args, **kwargs)
        response.compressible = True  # type: ignore[attr-defined]
        return response

    marked.compressible = True  # type: ignore[attr-defined]  # tests list the marked views
    return marked  # type: ignore[return-value]


def encoding_chosen(request: HttpRequest, response: HttpResponseBase) -> str:
    """'br', 'gzip' or '' (not compressed): only a marked, whole HTML answer."""
    if not getattr(response, "compressible", False) or response.streaming:
        return ""
    if response.has_header("Content-Encoding") or response.status_code != 200:
        return ""
    if not response.get("Content-Type", "").startswith("text/html"):
        return ""
    assert isinstance(response, HttpResponse)
    if len(response.content) < MIN_LENGTH:
        return ""
    offered = {m.lower() for m in _ACCEPTS.findall(request.headers.get("Accept-Encoding", ""))}
    return "br" if "br" in offered else "gzip" if "gzip" in offered else ""


class CompressionMiddleware:
    """Brotli (or gzip) for the answers `encoding_chosen` allows; `Vary: Accept-Encoding` on
    every answer that could have been compressed."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        if getattr(response, "compressible", False):
            patch_vary_headers(response, ("Accept-Encoding",))
        encoding = encoding_chosen(request, response)
        if not encoding:
            return response
        assert isinstance(response, HttpResponse)
        if encoding == "br":
            body = brotli.compress(response.content, quality=BROTLI_QUALITY)
        else:
            body = compress_string(response.content, max_random_bytes=GZIP_RANDOM_BYTES)
        response.content = body
        response["Content-Length"] = str(len(body))
        response["Content-Encoding"] = encoding
        etag = response.get("ETag")
        if etag and etag.startswith('"'):
            response["ETag"] = "W/" + etag  # the bytes differ from the uncompressed answer's
        return response
