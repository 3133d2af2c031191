"""Account mail: the address check and the password-reset link, in the reader's language."""

from __future__ import annotations

import re
from urllib.parse import unquote

import redis
from django.conf import settings
from django.core.mail import EmailMessage, EmailMultiAlternatives
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext, gettext_noop

from accounts.emails import reset_token_make, verify_gate_give_back, verify_token_make
from accounts.selectors import MailTarget
from strongroom.decoders import text_values
from strongroom.keyspace import PERSON
from strongroom.outbox import MailKind
from strongroom.zone import zone_name


def site_url(path: str) -> str:
    """An absolute link for mail (sent outside any request)."""
    return settings.STRONGROOM_SITE_URL + path


def message_build(
    *, target: MailTarget, subject: str, template: str, context: dict[str, object]
) -> EmailMessage:
    """A message to `target` in their language (the caller has switched): the text template
    as the plain-text part, and the same words as an HTML alternative in the site's look (no
    image: it reads the same with images off)."""
    # Every time in a message is on the site's clock, and says so (in the reader's language).
    body = render_to_string(
        template, {**context, "target": target, "site": site_url("/"), "site_zone": zone_name()}
    )
    message = EmailMultiAlternatives(subject=subject, body=body, to=[target.email])
    message.attach_alternative(html_body(subject=subject, text=body), "text/html")
    return message


# A link in a mail's text: from http(s):// to a space, a quote or bracket, or CJK punctuation
# (a Chinese line puts a full-width colon right before it, with no space: linkify sees none).
_LINK = re.compile(r"https?://[^\s<>\"'\u3000-\u303f\uff00-\uffef]+")


def line_pieces(line: str) -> list[tuple[str, bool]]:
    """A line of text as (piece, is_link) in order; a link's trailing . , ; : ! ? ) stay text."""
    pieces: list[tuple[str, bool]] = []
    at = 0
    for found in _LINK.finditer(line):
        link = found.group(0).rstrip(".,;:!?)")
        pieces += [(line[at : found.start()], False), (link, True)]
        at = found.start() + len(link)
    pieces.append((line[at:], False))
    return [piece for piece in pieces if piece[0]]


def html_body(*, subject: str, text: str) -> str:
    """The HTML part of a message whose plain text is `text`: its paragraphs (lines kept, links
    made links explicitly, everything escaped) in the site's layout, in the active language."""
    paragraphs = [
        [line_pieces(line.strip()) for line in block.splitlines() if line.strip()]
        for block in text.strip().split("\n\n")
    ]
    return render_to_string(
        "mail/layout.html",
        {
            "subject": subject,
            "paragraphs": [p for p in paragraphs if p],
            "language": translation.get_language() or "en",
            "site": site_url("/"),
        },
    )


def _notice(target: MailTarget, subject: str, template: str, **context: object) -> EmailMessage:
    """A notice about the account to `target`, in their language (`subject`: its English words,
    translated here), with the link to choose a new password."""
    with translation.override(target.language):
        context["forgot"] = site_url(reverse("accounts:reset_request"))
        return message_build(
            target=target, subject=gettext(subject), template=template, context=context
        )


def _fixed_address(args: list[str], at: int) -> str | None:
    """The address an entry was queued for (percent-encoded at `at`; None in older entries)."""
    return unquote(args[at]) if len(args) > at and args[at] else None


def verify_render(client: redis.Redis, args: list[str]) -> EmailMessage | None:
    """args: person id, nonce, next path (percent-encoded), address. Goes to the address it was
    queued for (the one its gate counted), only while it still waits to be confirmed: the
    person's new address waiting beside a confirmed one, or their unconfirmed one."""
    person_id, next_url = int(args[0]), unquote(args[2]) if len(args) > 2 else ""
    username, email, verified, pending, lang = text_values(
        client.hmget(
            PERSON.key(person_id=person_id),
            "username", "email", "email_verified", "email_pending", "lang",
        )
    )  # fmt: skip
    waiting = pending or (email if verified != "1" else None)
    fixed = _fixed_address(args, 3)
    if username is None or not waiting or (fixed is not None and fixed != waiting):
        if fixed is not None and len(args) > 1:  # unsent: its count goes back
            verify_gate_give_back(client, person_id=person_id, address=fixed, attempt_id=args[1])
        return None
    target = MailTarget(person_id, username, waiting, lang or "en")
    token = verify_token_make(person_id=person_id, email=waiting, next_url=next_url)
    with translation.override(target.language):
        return message_build(
            target=target,
            subject=gettext("Confirm your email address for Strongroom"),
            template="mail/verify.txt",
            context={"link": site_url(reverse("accounts:verify", args=[token]))},
        )


def reset_render(client: redis.Redis, args: list[str]) -> EmailMessage | None:
    """args: person id, nonce, address. Goes to the verified address it was queued for only."""
    from accounts.selectors import mail_target

    person_id = int(args[0])
    target = mail_target(client=client, person_id=person_id)
    fixed = _fixed_address(args, 2)
    if target is None or (fixed is not None and fixed != target.email):
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


def password_changed_render(client: redis.Redis, args: list[str]) -> EmailMessage | None:
    """args: person id, nonce, address. "Your password was changed", to the confirmed address
    it was queued for."""
    from accounts.selectors import mail_target

    target = mail_target(client=client, person_id=int(args[0]))
    if target is None or _fixed_address(args, 2) not in (None, target.email):
        return None
    subject = gettext_noop("Your Strongroom password was changed")
    return _notice(target, subject, "mail/password_changed.txt")


def email_changed_render(client: redis.Redis, args: list[str]) -> EmailMessage | None:
    """args: person id, nonce, the old address. "Your email address was changed", to the
    address the account had (confirmed) before."""
    person_id, old = int(args[0]), _fixed_address(args, 2)
    username, email, lang = text_values(
        client.hmget(PERSON.key(person_id=person_id), "username", "email", "lang")
    )
    if username is None or not old or email == old:
        return None
    target = MailTarget(person_id, username, old, lang or "en")
    return _notice(
        target, gettext_noop("Your Strongroom email address was changed"), "mail/email_changed.txt"
    )


def email_change_asked_render(client: redis.Redis, args: list[str]) -> EmailMessage | None:
    """args: person id, nonce, the confirmed address, the new one. "A new address was asked
    for", to the confirmed address, while the new one still waits to be confirmed."""
    person_id = int(args[0])
    kept, asked = _fixed_address(args, 2), _fixed_address(args, 3)
    username, email, pending, lang = text_values(
        client.hmget(PERSON.key(person_id=person_id), "username", "email", "email_pending", "lang")
    )
    if username is None or not kept or email != kept or not asked or pending != asked:
        return None
    target = MailTarget(person_id, username, kept, lang or "en")
    subject = gettext_noop("A new email address was asked for your Strongroom account")
    return _notice(target, subject, "mail/email_change_asked.txt", asked=asked)


def account_deleted_render(client: redis.Redis, args: list[str]) -> EmailMessage | None:
    """args: person id, name, language, address (queued before the person was forgotten):
    "your account is deleted", to the address the account had confirmed."""
    address = _fixed_address(args, 3)
    if not address:
        return None
    language = args[2] if args[2] in dict(settings.LANGUAGES) else "en"
    target = MailTarget(int(args[0]), unquote(args[1]), address, language)
    with translation.override(target.language):
        return message_build(
            target=target,
            subject=gettext("Your Strongroom account is deleted"),
            template="mail/account_deleted.txt",
            context={},
        )


# Plugged into the outbox by accounts' AppConfig.ready.
MAIL_KINDS = (
    MailKind("verify", verify_render),
    MailKind("reset", reset_render),
    MailKind("password_changed", password_changed_render),
    MailKind("email_changed", email_changed_render),
    MailKind("email_change_asked", email_change_asked_render),
    MailKind("account_deleted", account_deleted_render),
)
