"""What Django's password validators compare a password with, without a user model."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _


@dataclass(frozen=True)
class _Field:
    verbose_name: object


class _Meta:
    """The one thing UserAttributeSimilarityValidator asks of a model: a field's label."""

    def get_field(self, name: str) -> _Field:
        return _Field(verbose_name=_("username") if name == "username" else name)


@dataclass(frozen=True)
class PasswordSubject:
    """The person a password is for, as the validators see them."""

    username: str
    _meta = _Meta()


def password_validate(password: str, *, username: str) -> None:
    """Run Django's password validators for `username`; raises ValidationError."""
    # The validators only read attributes of `user` (username, _meta); django-stubs ask for a
    # user model instance, which this site does not have.
    validate_password(password, user=PasswordSubject(username=username))  # type: ignore[arg-type]


class NotBlankValidator:
    """A password of spaces alone (or other blank characters) is refused: it is long enough for
    the length rule and guessed first."""

    def validate(self, password: str, user: object = None) -> None:
        if not password.strip():
            raise ValidationError(_("Your password cannot be spaces alone."), code="blank")

    def get_help_text(self) -> str:
        return str(_("Your password cannot be spaces alone."))
