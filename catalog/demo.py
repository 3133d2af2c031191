"""The demo catalog: real programming and computer-science books from `data/books.psv`."""

from __future__ import annotations

import hashlib
from pathlib import Path

import redis

from catalog.rules import Book, split_tags
from catalog.selectors import tags_with_counts
from catalog.services import book_tags_fill, books_load

DATA_FILE = Path(__file__).resolve().parent / "data" / "books.psv"


def demo_book_id(title: str, year: int) -> str:
    """A stable id, so loading the file again finds the books it added before."""
    return "demo-" + hashlib.sha256(f"{title}\n{year}".encode()).hexdigest()[:16]


def read_books(path: Path = DATA_FILE) -> list[Book]:
    """The books of a data file: `title | authors | year | tags [| description]` per line."""
    books: list[Book] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = [field.strip() for field in line.split(" | ")]
        if len(fields) not in (4, 5):
            raise ValueError(f"{path.name}:{number}: expected 4 or 5 fields, got {len(fields)}")
        title, author, year, tags = fields[:4]
        books.append(
            Book(
                id=demo_book_id(title, int(year)),
                title=title,
                author=author,
                year=int(year),
                description=fields[4] if len(fields) == 5 else "",
                tags=tuple(split_tags(tags)),
            )
        )
    return books


def load_demo(client: redis.Redis) -> list[str]:
    """Add the demo books that are missing (idempotent; staff edits are kept)."""
    books = read_books()
    added = books_load(client=client, books=books)
    filled = book_tags_fill(client=client)  # books saved before the book-tags hash existed
    tags = len(tags_with_counts(client=client))
    lines = [f"{added} of {len(books)} demo books added; {tags} tags in the catalog"]
    if filled:
        lines.append(f"{filled} books' tag lists indexed for facet counts")
    return lines
