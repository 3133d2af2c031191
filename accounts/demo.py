"""Demo people: a staff member and a few buyers, with passwords kept outside the store."""

from __future__ import annotations

import json
import os
import secrets

import redis
from django.conf import settings

from accounts.selectors import person_find
from accounts.services import person_create

DEMO_STAFF = "curator"
DEMO_BUYERS = ("anna", "bo", "chen")
CREDENTIALS_FILE = "demo-credentials.txt"


def _credentials() -> dict[str, str]:
    """Demo passwords, generated once and kept in STRONGROOM_DATA_DIR (never in the store)."""
    path = settings.STRONGROOM_DATA_DIR / CREDENTIALS_FILE
    known: dict[str, str] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("{"):
                entry = json.loads(line)
                known[entry["username"]] = entry["password"]
    missing = [name for name in (DEMO_STAFF, *DEMO_BUYERS) if name not in known]
    if missing:
        for name in missing:
            known[name] = secrets.token_urlsafe(12)
        path.parent.mkdir(parents=True, exist_ok=True)
        text = "".join(
            json.dumps({"username": name, "password": password}) + "\n"
            for name, password in known.items()
        )
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
    return known


def load_demo(client: redis.Redis) -> list[str]:
    """Create the demo staff member and buyers if missing (never re-granting staff); return
    their credentials to print."""
    passwords = _credentials()
    lines = []
    for name in (DEMO_STAFF, *DEMO_BUYERS):
        is_staff = name == DEMO_STAFF
        person = person_find(client=client, username=name)
        if person is None:
            person = person_create(
                client=client, username=name, password=passwords[name], is_staff=is_staff
            )
        # An existing demo staff member whose staff was revoked stays revoked.
        role = "staff" if person.is_staff else "buyer"
        lines.append(f"{role} login: {name} / {passwords[name]}")
    lines.append(f"(passwords kept in {settings.STRONGROOM_DATA_DIR / CREDENTIALS_FILE})")
    return lines
