"""`manage.py staff NAME --grant|--revoke`: make a person staff, or not."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.selectors import person_find
from accounts.services import staff_set
from strongroom.store import get_store


class Command(BaseCommand):
    help = "Grant or revoke staff for an existing person; without a flag, show their status."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        group = parser.add_mutually_exclusive_group()
        group.add_argument("--grant", action="store_true")
        group.add_argument("--revoke", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        client = get_store()
        person = person_find(client=client, username=options["username"])
        if person is None:
            raise CommandError(f"No person is called {options['username']!r}.")
        if options["grant"] or options["revoke"]:
            person = staff_set(client=client, person_id=person.id, is_staff=options["grant"]).person
        status = "staff" if person.is_staff else "not staff"
        self.stdout.write(f"{person.username} (id {person.id}) is {status}.")
