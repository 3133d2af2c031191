"""Forms: they parse and check input; the writes happen in services."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django import forms
from django.conf import settings
from django.contrib.auth.password_validation import password_validators_help_texts
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from accounts.emails import EMAIL_MAX_LENGTH, email_normalise
from accounts.names import USERNAME_HELP, USERNAME_INPUT_MAX_LENGTH, username_validate
from accounts.passwords import password_validate
from accounts.people import Person
from strongroom.context_processors import BACK_MOST
from strongroom.focus import first_error_focused
from strongroom.templatetags.punctuation import gap

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise

PASSWORD_MAX_LENGTH = 256


# The id of the box a form's errors of no one field are shown in (the auth pages).
FORM_ERRORS_ID = "form-errors"


def focus_first_error(form: forms.Form, *, fallback: str = "") -> None:
    """A refused form's first field with an error takes the focus (`autofocus`): the browser
    brings it into view, with or without JavaScript, on a page where the form sits far down.
    With errors of the whole form only ("the username or the password is wrong"), the field
    `fallback` takes it, described by them (FORM_ERRORS_ID)."""
    if first_error_focused(form):
        return
    if fallback and form.non_field_errors():
        attrs = form.fields[fallback].widget.attrs
        attrs.update({"autofocus": True, "aria-invalid": "true"})
        attrs["aria-describedby"] = FORM_ERRORS_ID


def _password_field(
    label: StrOrPromise, *, autocomplete: str, help_text: str = ""
) -> forms.CharField:
    return forms.CharField(
        label=label,
        strip=False,
        max_length=PASSWORD_MAX_LENGTH,
        help_text=help_text,
        widget=forms.PasswordInput(attrs={"autocomplete": autocomplete}),
    )


def _username_field() -> forms.CharField:
    # No max_length on the input itself: a longer name must reach the validator's clear message.
    return forms.CharField(
        label=_("Username"),
        strip=False,
        help_text=USERNAME_HELP,
        widget=forms.TextInput(
            attrs={
                "autocomplete": "username",
                "autocapitalize": "none",
                "spellcheck": "false",
                "maxlength": str(USERNAME_INPUT_MAX_LENGTH),
            }
        ),
    )


def _password_rules() -> str:
    """The password rules as one text: sentences apart in English, none after a 。."""
    return gap().join(str(text) for text in password_validators_help_texts())


def _email_field(required: bool = False) -> forms.CharField:
    # A CharField (not EmailField) so that emails_normalise gives one clear message for all.
    return forms.CharField(
        label=_("Email address"),
        required=required,
        max_length=EMAIL_MAX_LENGTH,
        help_text=_(
            "Optional. For receipts, calendar files and a forgotten password; "
            "we send a link to confirm it."
        ),
        widget=forms.EmailInput(attrs={"autocomplete": "email", "spellcheck": "false"}),
    )


def _clean_email(value: str) -> str:
    return email_normalise(value) if value.strip() else ""


class SignupForm(forms.Form):
    """Username, password and its confirmation, and an optional email address."""

    username = _username_field()
    email = _email_field()
    password1 = _password_field(_("Password"), autocomplete="new-password")
    password2 = _password_field(_("Password again"), autocomplete="new-password")

    def clean_email(self) -> str:
        return _clean_email(self.cleaned_data.get("email", ""))

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["password1"].help_text = _password_rules()

    def clean_username(self) -> str:
        return username_validate(self.cleaned_data["username"])

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        first, second = data.get("password1"), data.get("password2")
        if first and second and first != second:
            self.add_error("password2", _("The two passwords differ."))
        if first:
            # Checked whatever the name's own problems and the second box: every error in one
            # answer (the name as typed, when refused, for the likeness rule).
            typed = str(self.data.get("username", ""))[:USERNAME_INPUT_MAX_LENGTH]
            try:
                password_validate(first, username=data.get("username") or typed)
            except ValidationError as error:
                self.add_error("password1", error)
        return data


class LoginForm(forms.Form):
    """Username and password; no rules shown or checked beyond presence and size."""

    # Stripped: no name has spaces at its ends (sign-up refuses them), and autofill or a paste
    # adds them.
    username = forms.CharField(
        label=_("Username"),
        max_length=USERNAME_INPUT_MAX_LENGTH,
        widget=forms.TextInput(
            attrs={"autocomplete": "username", "autocapitalize": "none", "spellcheck": "false"}
        ),
    )
    password = _password_field(_("Password"), autocomplete="current-password")
    next = forms.CharField(required=False, max_length=BACK_MOST, widget=forms.HiddenInput)


class EmailForm(forms.Form):
    """The account page's address and the language of mail; the current password, asked for
    only when the address changes (a session left open is not enough to take the address that
    resets the password)."""

    email = _email_field()
    language = forms.ChoiceField(label=_("Language of emails"), choices=settings.LANGUAGES)
    current_password = forms.CharField(
        label=_("Current password"),
        required=False,
        strip=False,
        max_length=PASSWORD_MAX_LENGTH,
        help_text=_("Needed only to change or remove the address."),
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}),
    )

    def clean_email(self) -> str:
        return _clean_email(self.cleaned_data.get("email", ""))


class ResetRequestForm(forms.Form):
    """'Forgot password': a username or a verified address."""

    login = forms.CharField(
        label=_("Username or email address"),
        max_length=EMAIL_MAX_LENGTH,
        widget=forms.TextInput(attrs={"autocomplete": "username", "spellcheck": "false"}),
    )


class SetPasswordForm(forms.Form):
    """A new password twice (password reset)."""

    new_password1 = _password_field(_("New password"), autocomplete="new-password")
    new_password2 = _password_field(_("New password again"), autocomplete="new-password")

    def __init__(self, *args: Any, username: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.username = username
        self.fields["new_password1"].help_text = _password_rules()

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        first, second = data.get("new_password1"), data.get("new_password2")
        if first and second and first != second:
            self.add_error("new_password2", _("The two passwords differ."))
        elif first:
            try:
                password_validate(first, username=self.username)
            except ValidationError as error:
                self.add_error("new_password1", error)
        return data


class PasswordChangeForm(SetPasswordForm):
    """The current password, then the new one twice."""

    old_password = _password_field(_("Current password"), autocomplete="current-password")
    field_order = ("old_password", "new_password1", "new_password2")

    def __init__(self, *args: Any, person: Person, **kwargs: Any) -> None:
        super().__init__(*args, username=person.username, **kwargs)
        self.person = person

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        old, new = data.get("old_password"), data.get("new_password1")
        if old and new and old == new and "new_password1" not in self.errors:
            self.add_error(
                "new_password1",
                _("The new password is the one you typed as current: choose a new one."),
            )
        return data


class DeleteAccountForm(forms.Form):
    """Deleting the account asks for the password."""

    password = _password_field(_("Your password"), autocomplete="current-password")
