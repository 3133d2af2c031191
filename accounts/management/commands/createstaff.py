"""`manage.py createstaff NAME`: a new staff account (password prompted or from the env)."""

from __future__ import annotations

import getpass
import os
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.services import person_create
from strongroom.store import get_store

PASSWORD_ENV = "STRONGROOM_STAFF_PASSWORD"  # noqa: S105 (a variable name)


class Command(BaseCommand):
    help = f"Create a staff account. The password comes from ${PASSWORD_ENV} or a prompt."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")

    def handle(self, *args: Any, **options: Any) -> None:
        password = os.environ.get(PASSWORD_ENV)
        if not password:
            if not os.isatty(0):
                raise CommandError(f"Set {PASSWORD_ENV} or run this in a terminal.")
            password = getpass.getpass("Password: ")
            if password != getpass.getpass("Password again: "):
                raise CommandError("The two passwords differ.")
        try:
            person = person_create(
                client=get_store(), username=options["username"], password=password, is_staff=True
            )
        except ValidationError as error:
            raise CommandError(" ".join(str(m) for m in error.messages)) from error
        self.stdout.write(f"Staff account {person.username} created (id {person.id}).")
