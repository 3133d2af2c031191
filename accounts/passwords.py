"""What Django's password validators compare a password with, without a user model."""

from __future__ import annotations

from dataclasses import dataclass

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
