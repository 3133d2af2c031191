"""Response headers about privacy: who may cache a page, and which browser features it may use."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils.cache import has_vary_header, patch_cache_control

# No page uses any of these; denying them keeps an injected frame or script from asking.
PERMISSIONS_POLICY = ", ".join(
    f"{feature}=()"
    for feature in (
        "accelerometer", "camera", "geolocation", "gyroscope", "magnetometer", "microphone",
        "payment", "usb", "browsing-topics",
    )
)  # fmt: skip
PRIVATE = "private, no-store"


class PermissionsPolicyMiddleware:
    """Every response, static files included, says the site uses no powerful browser feature."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response.setdefault("Permissions-Policy", PERMISSIONS_POLICY)
        return response


class PrivatePagesMiddleware:
    """A page for someone with a session (signed in, holding or booking) or the answer to a form
    may show a pickup code or personal data, and a page with a form carries its visitor's CSRF
    token: no shared cache or browser history may keep any of them.

    Sits below whitenoise, so static files keep their long public max-age.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        cookie = settings.SESSION_COOKIE_NAME
        if (
            cookie in request.COOKIES
            or cookie in response.cookies
            or request.method not in ("GET", "HEAD")
        ):
            response["Cache-Control"] = PRIVATE
        elif has_vary_header(response, "Cookie"):
            # Made for this visitor's cookies: a form's token (every page's language switch;
            # Django's CSRF middleware says "Vary: Cookie" then). No shared cache may hand the
            # page to another; the browser may keep it for going back.
            patch_cache_control(response, private=True)
        return response
