"""The site benchmark's HTTP side: signed-in sessions, fetching pages, CSRF tokens, serving
the site with gunicorn."""

from __future__ import annotations

import re
import subprocess
from typing import Any

from strongroom.serving import fetch, start_site

# --- sessions and CSRF --------------------------------------------------------------------------


def session_cookie(client: Any, person: Any) -> str:
    """A signed-in session in the store, as the login view makes it; returns the cookie pair."""
    from django.conf import settings

    from accounts.selectors import person_with_password
    from accounts.sessions import SessionStore, session_sign_in

    found = person_with_password(client=client, person_id=person.id)
    assert found is not None
    session = SessionStore()
    session_sign_in(session, person=found[0], password_hash=found[1])
    session.save()
    return f"{settings.SESSION_COOKIE_NAME}={session.session_key}"


def page_text(html: str) -> str:
    """The visible text of a page's <main> (what the page says went wrong)."""
    main = html.split("<main", 1)[-1]
    # The messages and error lists first: they say why; the rest is the page around them.
    found = re.findall(r'<ul class="(?:messages|errorlist)[^"]*"[^>]*>(.*?)</ul>', main, re.S)
    text = re.sub(r"<[^>]*>", " ", " ".join(found) or main)
    return html[:4] + " " + re.sub(r"\s+", " ", text).strip()


def csrf_identity(base: str, cookie: str, path: str) -> tuple[str, str]:
    """GET a page as a logged-in buyer; return (Cookie header with csrftoken, form token)."""
    from django.conf import settings

    status, headers, text = fetch(base, path, cookie=cookie)
    if status != 200:
        raise RuntimeError(f"GET {path} for a CSRF token answered {status}")
    match = re.search(rf"{settings.CSRF_COOKIE_NAME}=([A-Za-z0-9]+)", headers["set-cookie"])
    token = re.search(r'name="csrfmiddlewaretoken" value="([A-Za-z0-9]+)"', text)
    if not match or not token:
        raise RuntimeError(f"GET {path} gave no CSRF cookie or token")
    return f"{cookie}; {settings.CSRF_COOKIE_NAME}={match.group(1)}", token.group(1)


# --- the served site ----------------------------------------------------------------------------


def serve(env: dict[str, str], workers: int) -> tuple[subprocess.Popen[bytes], str]:
    """collectstatic, then gunicorn as production runs it (the site's application wrapped by
    bench/wsgi.py for the in-memory twins); returns once /healthz answers."""
    return start_site(env, workers=workers, app="bench.wsgi")
