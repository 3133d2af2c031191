"""The mail queue's keys: reminders, the site's outbox stream, tries, dead letters, the sweep."""

from __future__ import annotations

from django.utils.translation import gettext_noop as noop

from strongroom.keyspace.core import declare

MAIL_REMINDED = declare(
    "mail-reminded",
    "{mail}:reminded:<date>",
    type="set",
    holds=noop("booking ids whose first day is <date> and whose reminder is queued"),
    app="booking",
    why=noop(
        "added in the same transaction as the reminder's outbox entry (same tag as the outbox), "
        "so each booking is reminded once, whatever sender passes or restarts come; expires "
        "after its day"
    ),
)
MAIL_OUTBOX = declare(
    "mail-outbox",
    "{mail}:queue",
    type="stream",
    holds=noop(
        "mail about accounts (field m: 'verify|<person id>|<nonce>|...', 'reset|<person "
        "id>|<nonce>|...'), with the consumer group 'senders'; rooms keep their own outbox"
    ),
    app="strongroom",
    why=noop(
        "an entry is acknowledged and deleted only once the mail server took it; one a "
        "sender stopped touching (it died) is taken over by another within seconds"
    ),
)
MAIL_TRIES = declare(
    "mail-tries",
    "{mail}:tries",
    type="hash",
    holds=noop(
        "'<outbox key> <entry id>' -> 'attempts|first failure ms|next try ms|last error' of "
        "messages that failed at least once"
    ),
    app="strongroom",
)
MAIL_DEAD = declare(
    "mail-dead",
    "{mail}:dead",
    type="hash",
    holds=noop(
        "'<outbox key> <entry id>' -> JSON (box, member, attempts, first, at, error) of "
        "messages that failed every try; staff retry or discard them"
    ),
    app="strongroom",
)
MAIL_ONCE = declare(
    "mail-once",
    "{mail}:once:<request>",
    type="string",
    holds=noop(
        "a message queued for the form request <request> (staff's receipt sent again; "
        "deleted-<person>: the notice that an account is deleted)"
    ),
    app="strongroom",
    why=noop(
        "set with the queueing in one call (mail_queue_once): the same form sent twice, or a "
        "double click, queues one message; expires after a day"
    ),
)
MAIL_SWEEP = declare(
    "mail-sweep",
    "{mail}:sweep",
    type="string",
    holds=noop("the sender that runs the periodic hooks this period; PX expiry, never released"),
    app="strongroom",
    why=noop(
        "one waiting-list sweep per period across processes; nothing waits on it after a crash"
    ),
)
