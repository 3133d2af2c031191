"""The focus of a refused form: its first field with an error takes it (`autofocus`), so the
browser brings that field into view, with or without JavaScript, on a page where the form sits
far down. Every app's refused forms use it (accounts adds a fallback for errors of no field)."""

from __future__ import annotations

from django import forms


def first_error_focused(form: forms.BaseForm) -> bool:
    """Give the form's first field with an error the focus; False when no field has one."""
    for name in form.errors:
        if name in form.fields:
            form.fields[name].widget.attrs["autofocus"] = True
            return True
    return False
