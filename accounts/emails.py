"""A person's email address: setting it, verifying it, and password reset by email.

Verification links carry a signed, expiring token naming the person and the address (a link
for an address the person has since changed verifies nothing). Password-reset links use
Django's token generator over the person's id, password hash, last login and address: setting
a new password changes the hash, so a link works once; it expires after PASSWORD_RESET_TIMEOUT.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from urllib.parse import quote

import redis
from django.contrib.auth.tokens import PasswordResetTokenGenerator
from django.core import signing
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.utils.translation import gettext_lazy as _

from accounts.calls import EMAIL_CLAIM, EMAIL_CONFIRM, EMAIL_FORGET, EMAIL_SET
from accounts.calls import MAIL_GATE as MAIL_GATE_CALL
from accounts.extensions import EMAIL_VERIFIED
from accounts.selectors import mail_target, person_find, person_id_by_email
from accounts.throttle import mail_gate_keys
from strongroom.addresses import address_arg, address_one_form, address_sendable
from strongroom.decoders import text_values
from strongroom.keyspace import PERSON, PERSON_BY_EMAIL
from strongroom.libraries import fcall
from strongroom.outbox import mail_queue

EMAIL_MAX_LENGTH = 254
VERIFY_SALT = "strongroom.accounts.verify-email"
VERIFY_MAX_AGE_S = 3 * 24 * 3600
_TOOK_ITS_PLACE = 2  # accounts_email_confirm: a waiting address took the confirmed one's place
# Mail someone asked for, bounded whatever was sent before (so that nobody can make the site
# flood an inbox). Confirmation links from address changes and sign-ups: per person and to one
# address from every account, in any hour. "Send the link again" and reset links: one per person
# per ten minutes, a few to one address and a few from one client in any hour. The address counted
# is the one the mail goes to: it is fixed in the outbox entry.
VERIFY_MAILS_PER_PERSON = 5
VERIFY_MAILS_PER_ADDRESS = 3
VERIFY_WINDOW_MS = 3_600_000
ASKED_PER_PERSON, ASKED_PERSON_WINDOW_MS = 1, 600_000
ASKED_PER_ADDRESS, ASKED_PER_CLIENT, ASKED_WINDOW_MS = 3, 5, 3_600_000


@dataclass(frozen=True)
class MailGate:
    """The limits of one kind of mail someone asks for (a limit of 0: not counted)."""

    kind: str
    person: tuple[int, int]
    address: tuple[int, int]
    client: tuple[int, int] = (0, 0)


VERIFY_GATE = MailGate(
    "verify",
    (VERIFY_MAILS_PER_PERSON, VERIFY_WINDOW_MS),
    (VERIFY_MAILS_PER_ADDRESS, VERIFY_WINDOW_MS),
)
RESEND_GATE = MailGate(
    "resend",
    (ASKED_PER_PERSON, ASKED_PERSON_WINDOW_MS),
    (ASKED_PER_ADDRESS, ASKED_WINDOW_MS),
    (ASKED_PER_CLIENT, ASKED_WINDOW_MS),
)
RESET_GATE = MailGate(
    "reset",
    (ASKED_PER_PERSON, ASKED_PERSON_WINDOW_MS),
    (ASKED_PER_ADDRESS, ASKED_WINDOW_MS),
    (ASKED_PER_CLIENT, ASKED_WINDOW_MS),
)


def mail_gate_opens(
    *,
    client: redis.Redis,
    gate: MailGate,
    person_id: int,
    address: str,
    client_id: str = "",
    attempt_id: str = "",
) -> int:
    """Whether one more mail of `gate`'s kind may go to `address` for this person, asked from
    `client_id`: 0 when it may (and it is counted, under `attempt_id`, the mail's outbox nonce:
    a mail dropped unsent gives its count back), else the epoch ms at which the gate that
    refused it opens again. One call that checks every window before it counts."""
    keys = mail_gate_keys(kind=gate.kind, person_id=person_id, address=address, client_id=client_id)
    client_limit = gate.client if client_id else (0, 0)
    args = {
        "now_ms": int(time.time() * 1000),
        "attempt_id": attempt_id or secrets.token_hex(8),
        "person_limit": gate.person[0],
        "person_window_ms": gate.person[1],
        "address_limit": gate.address[0],
        "address_window_ms": gate.address[1],
        "client_limit": client_limit[0],
        "client_window_ms": client_limit[1],
    }
    call_keys, call_args = MAIL_GATE_CALL.call(keys=keys, args=args)
    return int(fcall(client, MAIL_GATE_CALL.name, call_keys, call_args))


def email_normalise(value: str) -> str:
    """A checked address in one form (`address_one_form`: lower case, the domain in Unicode);
    raises ValidationError with a clear message."""
    address = value.strip()
    if len(address) > EMAIL_MAX_LENGTH:
        raise ValidationError(_("An email address is at most 254 characters."), code="long")
    try:
        validate_email(address)
    except ValidationError:  # in our words: Django's Chinese says "Email" in Latin letters
        raise ValidationError(_("Enter a valid email address."), code="invalid") from None
    if not address_sendable(address):
        raise ValidationError(
            _("Enter an email address that mail can be sent to."), code="unsendable"
        )
    return address_one_form(address)


def _next_arg(next_url: str) -> str:
    # Outbox arguments never contain "|": the path is percent-encoded (a safe path has no "|").
    return quote(next_url[:1000], safe="/?=&%-_.~+")


def email_set(
    *,
    client: redis.Redis,
    person_id: int,
    email: str,
    next_url: str = "",
    language: str = "",
) -> str:
    """Store a new address and queue its confirmation mail, or clear it when empty; `language`
    (checked) is saved in the same write. A new address beside a confirmed one waits
    (`email_pending`), the confirmed one in use and told, until its link is opened. Returns
    "sent" / "waiting" (a link is queued; "waiting": beside the confirmed one), "saved" (nothing
    to confirm, or this address was saved already: "Send the link again" sends it), or "later" /
    "waiting_later" (saved, but the person or the address had as many links this hour as they
    may). One call decides and writes the address (two forms at once change it once), then a
    pipeline of mail: three round trips when a link is asked for, one when nothing changed."""
    address = email_normalise(email) if email.strip() else ""
    person = {"person": PERSON.key(person_id=person_id)}
    keys, args = EMAIL_SET.call(keys=person, args={"email": address, "language": language})
    status, current, was = text_values(fcall(client, EMAIL_SET.name, keys, args))
    if status in ("same", "gone") or current is None:
        return "saved"
    nonce = secrets.token_hex(6)
    gate = _verify_mail_gate(client, person_id, address, attempt=nonce) if address else "saved"
    pipe = client.pipeline(transaction=False)
    if status == "waiting":
        told = (person_id, secrets.token_hex(6), address_arg(current), address_arg(address))
        mail_queue(pipe, kind="email_change_asked", args=told)
    elif current:
        # The old address leaves the index only if it still points here (also a claim whose
        # confirmation was cut off before the flag); a confirmed one is told.
        _index_forget(pipe, person_id=person_id, email=current)
        if was == "1":
            notice = (person_id, secrets.token_hex(6), address_arg(current))
            mail_queue(pipe, kind="email_changed", args=notice)
    if gate == "sent":
        link = (person_id, nonce, _next_arg(next_url), address_arg(address))
        mail_queue(pipe, kind="verify", args=link)
    if len(pipe):
        pipe.execute()
    if status == "waiting":
        return "waiting" if gate == "sent" else "waiting_later"
    return gate


def _verify_mail_gate(client: redis.Redis, person_id: int, address: str, *, attempt: str) -> str:
    """ "sent" if one more confirmation mail may go, for this person and to this address."""
    opens = mail_gate_opens(
        client=client, gate=VERIFY_GATE, person_id=person_id, address=address, attempt_id=attempt
    )
    return "later" if opens else "sent"


def verify_gate_give_back(
    client: redis.Redis, *, person_id: int, address: str, attempt_id: str
) -> None:
    """A confirmation mail dropped unsent (the address changed or was confirmed before it
    went) no longer counts against the person or the address: else three throwaway accounts
    setting someone's address and clearing it again used up that address's hour without one
    mail reaching it, and its owner could not confirm it."""
    keys = [
        key
        for gate in (VERIFY_GATE, RESEND_GATE)
        for name, key in mail_gate_keys(
            kind=gate.kind, person_id=person_id, address=address, client_id=""
        ).items()
        if name in ("person", "address")
    ]
    pipe = client.pipeline(transaction=False)
    for key in keys:
        pipe.zrem(key, attempt_id)
    pipe.execute()


def _index_forget(pipe: redis.client.Pipeline, *, person_id: int, email: str) -> None:
    # Compare-and-delete in one step: someone else may have verified the address since.
    keys, args = EMAIL_FORGET.call(
        keys={"by_email": PERSON_BY_EMAIL.key()}, args={"email": email, "person_id": person_id}
    )
    pipe.fcall(EMAIL_FORGET.name, len(keys), *keys, *args)


@dataclass(frozen=True)
class Resent:
    """What "send the link again" came to: "sent", "later" (the gate refused; `opens_ms`: when
    it may be asked again) or "nothing" (no address waits to be confirmed)."""

    outcome: str
    opens_ms: int = 0


def email_resend(*, client: redis.Redis, person_id: int, client_id: str = "") -> Resent:
    """Queue the verification mail again for an address not verified yet (the waiting one, or
    the one in use), through the gate."""
    current, verified, pending = text_values(
        client.hmget(PERSON.key(person_id=person_id), "email", "email_verified", "email_pending")
    )
    email = pending or current
    if not email or (email == current and verified == "1"):
        return Resent("nothing")
    nonce = secrets.token_hex(6)
    opens = mail_gate_opens(
        client=client,
        gate=RESEND_GATE,
        person_id=person_id,
        address=email,
        client_id=client_id,
        attempt_id=nonce,
    )
    if opens:
        return Resent("later", opens)
    args = (person_id, nonce, "", address_arg(email))
    mail_queue(client, kind="verify", args=args)
    return Resent("sent")


def verify_token_make(*, person_id: int, email: str, next_url: str = "") -> str:
    """The signed token of a verification link."""
    return signing.dumps({"p": person_id, "e": email, "n": next_url}, salt=VERIFY_SALT)


@dataclass(frozen=True)
class Verified:
    """A confirmation's outcome: `taken` when another account has confirmed the address first
    (nothing was changed)."""

    person_id: int
    next_url: str
    taken: bool = False


def verify_token_read(token: str) -> tuple[int, str, str] | None:
    """The person id, address and onward path of a valid, unexpired token, or None."""
    if not isinstance(token, str) or len(token) > 2000:
        return None
    try:
        data = signing.loads(token, salt=VERIFY_SALT, max_age=VERIFY_MAX_AGE_S)
        return int(data["p"]), str(data["e"]), str(data.get("n", ""))
    except (signing.BadSignature, KeyError, TypeError, ValueError):
        return None


def email_verify(*, client: redis.Redis, token: str) -> Verified | None:
    """Mark the address of a valid, unexpired token verified; None when the token is bad, old,
    or names an address the person no longer has (nor waits for). An address is one account's:
    one confirmed by another account first stays theirs (`taken`, nothing written). A waiting
    address takes the confirmed one's place, which leaves the index and is told."""
    read = verify_token_read(token)
    if read is None:
        return None
    person_id, email, next_url = read
    key = PERSON.key(person_id=person_id)
    current, pending = text_values(client.hmget(key, "email", "email_pending"))
    if email not in (current, pending):
        return None
    # The index first, in one checked step (another account may confirm it at the same moment),
    # then the flag, set only if the person still has this address (the index and the person sit
    # in different slots on a cluster: two calls). An address changed in between is not
    # confirmed, and its claim is let go.
    index = {"by_email": PERSON_BY_EMAIL.key()}
    keys, args = EMAIL_CLAIM.call(keys=index, args={"email": email, "person_id": person_id})
    if fcall(client, EMAIL_CLAIM.name, keys, args) == "taken":
        return Verified(person_id, next_url, taken=True)
    keys, args = EMAIL_CONFIRM.call(keys={"person": key}, args={"email": email})
    done = int(fcall(client, EMAIL_CONFIRM.name, keys, args))
    if not done:
        keys, args = EMAIL_FORGET.call(keys=index, args={"email": email, "person_id": person_id})
        fcall(client, EMAIL_FORGET.name, keys, args)
        return None
    if done == _TOOK_ITS_PLACE and current and current != email:
        pipe = client.pipeline(transaction=False)
        _index_forget(pipe, person_id=person_id, email=current)
        notice = (person_id, secrets.token_hex(6), address_arg(current))
        mail_queue(pipe, kind="email_changed", args=notice)
        pipe.execute()
    for hook in EMAIL_VERIFIED:  # e.g. the receipts that found no confirmed address
        hook(client=client, person_id=person_id)
    return Verified(person_id, next_url)


# --- password reset ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ResetSubject:
    """What Django's token generator reads of a user, for one person."""

    pk: int
    password: str
    last_login: None
    login_ms: str
    email: str

    @classmethod
    def get_email_field_name(cls) -> str:
        return "email"


class ResetTokens(PasswordResetTokenGenerator):
    """Django's generator; the last login is kept in epoch ms, not as a datetime."""

    key_salt = "strongroom.accounts.password-reset"

    def _make_hash_value(self, user: ResetSubject, timestamp: int) -> str:  # type: ignore[override]
        return f"{user.pk}{user.password}{user.login_ms}{timestamp}{user.email}"


reset_tokens = ResetTokens()


def reset_subject(*, client: redis.Redis, person_id: int) -> ResetSubject | None:
    """The person as the token generator sees them, or None."""
    password, last, email = text_values(
        client.hmget(PERSON.key(person_id=person_id), "password", "last_login", "email")
    )
    if password is None:
        return None
    return ResetSubject(person_id, password, None, last or "", email or "")


def reset_token_make(*, client: redis.Redis, person_id: int) -> str:
    subject = reset_subject(client=client, person_id=person_id)
    if subject is None:
        raise LookupError(person_id)
    return reset_tokens.make_token(subject)  # type: ignore[arg-type]


def reset_token_check(*, client: redis.Redis, person_id: int, token: str) -> bool:
    """Whether `token` is a live reset token of this person (unused and unexpired)."""
    if not isinstance(token, str) or len(token) > 100:
        return False
    subject = reset_subject(client=client, person_id=person_id)
    return subject is not None and reset_tokens.check_token(subject, token)  # type: ignore[arg-type]


def password_reset_request(*, client: redis.Redis, login: str, client_id: str = "") -> None:
    """Queue a reset mail for the person with this username or verified address (if any),
    through the gate (one per person per ten minutes, a few per address and per asking client
    an hour); the caller says the same whatever happened, so nobody learns who has an
    account."""
    text = login.strip()
    if not text or len(text) > EMAIL_MAX_LENGTH:
        return
    person_id = None
    if "@" in text:
        person_id = person_id_by_email(client=client, email=text)
    if person_id is None:
        person = person_find(client=client, username=text)
        person_id = person.id if person is not None else None
    target = mail_target(client=client, person_id=person_id) if person_id is not None else None
    if target is None:
        return
    if not mail_gate_opens(
        client=client,
        gate=RESET_GATE,
        person_id=target.person_id,
        address=target.email,
        client_id=client_id,
    ):
        args = (target.person_id, secrets.token_hex(6), address_arg(target.email))
        mail_queue(client, kind="reset", args=args)
