"""Django sessions in the store, on the shared connection: one string key per session.

A subclass may read more along with the session, in the same pipeline (`_reads_along`), and
name what to read in the key it draws (`_new_key`): accounts' store reads the signed-in person
with the session, so a request's identity is one round trip (`accounts.sessions`). A view's
first reads may ride in the same pipeline (`load_with`, strongroom/ahead.py).
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from django.conf import settings
from django.contrib.sessions.backends.base import (
    VALID_KEY_CHARS,
    CreateError,
    SessionBase,
    UpdateError,
)
from django.core import signing
from django.utils.crypto import get_random_string
from redis.client import Pipeline

from strongroom.ahead import Command
from strongroom.keyspace import SESSION
from strongroom.store import UNAVAILABLE, get_store

# django-stubs leave out SessionBase's private helpers that Django's own backends use
# (_get_or_create_session_key, _get_new_session_key, _get_session): hence the ignores below.


class _Verified(signing.JSONSerializer):
    """A signing serializer that leaves the verified payload as it is (bytes)."""

    def loads(self, data: bytes) -> Any:
        return data


@functools.lru_cache(maxsize=4096)
def _verified_payload(
    session_data: str | bytes, salt: str, secret: str, fallbacks: tuple[str, ...]
) -> bytes:
    """A session's signed contents, checked and unpacked (not yet parsed): the same string
    checks the same way every time, so each worker checks a session's HMAC once per change of
    its contents, not once per request. A bad signature raises and is not kept."""
    del secret, fallbacks  # part of the key only: signing reads the settings themselves
    text = session_data.decode() if isinstance(session_data, bytes) else session_data
    payload: bytes = signing.loads(text, salt=salt, serializer=_Verified)
    return payload


class SessionStore(SessionBase):
    """A session is one string with a TTL; Django signs and encodes its contents."""

    def decode(self, session_data: str | bytes) -> dict[str, Any]:
        """Django's decoding, with the signature check kept per worker (`_verified_payload`);
        the contents are parsed afresh each time, so no request sees another's changes."""
        try:
            payload = _verified_payload(
                session_data,
                self.key_salt,
                settings.SECRET_KEY,
                tuple(settings.SECRET_KEY_FALLBACKS),
            )
            decoded = self.serializer().loads(payload)
        except signing.BadSignature:
            logging.getLogger("django.security.SuspiciousSession").warning("Session data corrupted")
            return {}
        except Exception:
            return {}  # Django's own rule: contents that cannot be read are an empty session
        return decoded if isinstance(decoded, dict) else {}

    def _key(self, session_key: str | None = None) -> str:
        key = session_key or self._get_or_create_session_key()  # type: ignore[attr-defined]
        return SESSION.key(session_key=key)

    # Commands a view reads ahead with the session (strongroom/ahead.py), and their replies.
    _ahead: tuple[Command, ...] = ()
    _ahead_replies: list[Any] | None = None

    def load_with(self, commands: tuple[Command, ...]) -> list[Any] | None:
        """Read the session now with `commands` in the same pipeline; their replies, or None
        when the session was read already or has no key (nothing to ride with)."""
        if not self.session_key or hasattr(self, "_session_cache"):
            return None
        self._ahead, self._ahead_replies = commands, None
        try:
            self._get_session()  # type: ignore[attr-defined]
        finally:
            self._ahead = ()
        return self._ahead_replies

    # A read the store did not answer, kept for the rest of the request: the answer to the
    # outage (the 503 page, whose header asks who is signed in) must not wait out the store's
    # timeout a second time.
    _unanswered: BaseException | None = None

    def unanswered(self, error: BaseException) -> None:
        """The store did not answer this request: a session not read yet is not asked for
        either (the 503 page's header would ask a stalled store once more, and wait again)."""
        if not hasattr(self, "_session_cache"):
            self._unanswered = error

    def load(self) -> dict[str, Any]:
        if not self.session_key:
            self._session_key = None
            return {}
        if self._unanswered is not None:
            raise self._unanswered
        try:
            return self._load(self.session_key)
        except UNAVAILABLE as error:
            self._unanswered = error
            raise

    def _load(self, session_key: str) -> dict[str, Any]:
        pipe = get_store().pipeline(transaction=False)
        pipe.get(self._key(session_key))
        self._reads_along(pipe, session_key)
        along_end = len(pipe)
        for args, options in self._ahead:
            pipe.execute_command(*args, **options)
        data, *along = pipe.execute()
        self._read_along(along[: along_end - 1])
        if self._ahead:
            self._ahead_replies = along[along_end - 1 :]
        if data is None:
            self._session_key = None
            return {}
        return self.decode(data)

    def _reads_along(self, pipe: Pipeline, session_key: str) -> None:
        """Queue reads that ride with the session's GET (none here)."""

    def _read_along(self, replies: list[Any]) -> None:
        """The replies of `_reads_along`, in order."""

    def _new_key(self, data: dict[str, Any]) -> str:
        """A fresh key for a session holding `data`."""
        return get_random_string(32, VALID_KEY_CHARS)

    def _get_new_session_key(self) -> str:
        # No EXISTS probe (Django's way, one round trip): create() writes with SET NX and
        # draws again on a collision.
        return self._new_key(getattr(self, "_session_cache", {}))

    def exists(self, session_key: str) -> bool:
        return bool(get_store().exists(self._key(session_key)))

    def create(self) -> None:
        for _ in range(10):
            self._session_key = self._get_new_session_key()
            try:
                self.save(must_create=True)
            except CreateError:
                continue
            self.modified = True
            return
        raise RuntimeError("could not create a unique session key")

    def save(self, must_create: bool = False) -> None:
        if self.session_key is None:
            return self.create()
        data = self.encode(self._get_session(no_load=must_create))  # type: ignore[attr-defined]
        age = self.get_expiry_age()
        if age <= 0:
            # Expired as it is saved (an expiry now or in the past): nothing is kept, as the
            # server would drop it at once; the next load finds an empty session.
            get_store().delete(self._key(self.session_key))
            return None
        written = get_store().set(
            self._key(self.session_key),
            data,
            ex=age,
            nx=must_create,
            xx=not must_create,
        )
        if not written:
            raise CreateError if must_create else UpdateError
        return None

    def delete(self, session_key: str | None = None) -> None:
        key = session_key or self.session_key
        if key:
            get_store().delete(self._key(key))

    @classmethod
    def clear_expired(cls) -> None:
        """The server expires sessions by itself."""
