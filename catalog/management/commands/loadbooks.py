from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from catalog.demo import DATA_FILE, read_books
from catalog.rules import InvalidBook
from catalog.services import books_load
from strongroom.store import get_store


class Command(BaseCommand):
    help = "Add the books of a data file (title | authors | year | tags per line); idempotent."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", nargs="?", default=str(DATA_FILE), help="the data file")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            books = read_books(Path(options["path"]))
            added = books_load(client=get_store(), books=books)
        except (OSError, ValueError, InvalidBook) as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"{added} of {len(books)} books added")
