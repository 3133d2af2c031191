"""Account mail: the address check and the password-reset link, in the reader's language."""

from __future__ import annotations

from urllib.parse import unquote

import redis
from django.conf import settings
from django.core.mail import EmailMessage
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext

from accounts.emails import reset_token_make, verify_token_make
from accounts.selectors import MailTarget
from strongroom.keyspace import PERSON
from strongroom.outbox import MailKind
from strongroom.store import text_values
from strongroom.zone import zone_name


def site_url(path: str) -> str:
    """An absolute link for mail (sent outside any request)."""
    return settings.STRONGROOM_SITE_URL + path


def message_build(
    *, target: MailTarget, subject: str, template: str, context: dict[str, object]
) -> EmailMessage:
    """A plain-text message to `target`, rendered in their language (the caller has switched)."""
    # Every time in a message is on the site's clock, and says so (in the reader's language).
    body = render_to_string(
        template, {**context, "target": target, "site": site_url("/"), "site_zone": zone_name()}
    )
    return EmailMessage(subject=subject, body=body, to=[target.email])


def verify_render(client: redis.Redis, args: list[str]) -> EmailMessage | None:
    """args: person id, nonce, next path (percent-encoded). Goes to the unverified address."""
    person_id, next_url = int(args[0]), unquote(args[2]) if len(args) > 2 else ""
    username, email, verified, lang = text_values(
        client.hmget(PERSON.key(person_id=person_id), "username", "email", "email_verified", "lang")
    )
    if username is None or not email or verified == "1":
        return None
    target = MailTarget(person_id, username, email, lang or "en")
    token = verify_token_make(person_id=person_id, email=email, next_url=next_url)
    with translation.override(target.language):
        return message_build(
            target=target,
            subject=gettext("Confirm your email address for Strongroom"),
            template="mail/verify.txt",
            context={"link": site_url(reverse("accounts:verify", args=[token]))},
        )


def reset_render(client: redis.Redis, args: list[str]) -> EmailMessage | None:
    """args: person id, nonce. Goes to the verified address only."""
    from accounts.selectors import mail_target

    person_id = int(args[0])
    target = mail_target(client=client, person_id=person_id)
    if target is None:
        return None
    token = reset_token_make(client=client, person_id=person_id)
    minutes = settings.PASSWORD_RESET_TIMEOUT // 60
    with translation.override(target.language):
        return message_build(
            target=target,
            subject=gettext("Reset your Strongroom password"),
            template="mail/reset.txt",
            context={
                "link": site_url(reverse("accounts:reset_confirm", args=[person_id, token])),
                "minutes": minutes,
            },
        )


# Plugged into the outbox by accounts' AppConfig.ready.
MAIL_KINDS = (MailKind("verify", verify_render), MailKind("reset", reset_render))
