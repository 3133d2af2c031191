"""Who is making a request: a signed-in `Person` or the `AnonymousPerson`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Person:
    """A signed-in person; `username` is shown exactly as it was typed at sign-up."""

    id: int
    username: str
    is_staff: bool = False
    # Bumped by "sign out everywhere else": part of every session's check value.
    session_epoch: str = ""

    @property
    def pk(self) -> int:
        return self.id

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def is_anonymous(self) -> bool:
        return False

    @property
    def display_name(self) -> str:
        return self.username

    def __str__(self) -> str:
        return self.username


@dataclass(frozen=True)
class AnonymousPerson:
    """A visitor who has not signed in."""

    id: None = None
    username: str = ""
    is_staff: bool = False

    @property
    def pk(self) -> None:
        return None

    @property
    def is_authenticated(self) -> bool:
        return False

    @property
    def is_anonymous(self) -> bool:
        return True

    @property
    def display_name(self) -> str:
        return ""

    def __str__(self) -> str:
        return ""


ANONYMOUS = AnonymousPerson()
