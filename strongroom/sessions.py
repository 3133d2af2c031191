"""Django sessions in the store, on the shared connection: one string key per session.

A signed-in session's key ends with `-<person id>` (`accounts.sessions.session_key_new`), so
loading it reads the person's record in the same pipeline: the request's identity costs one
round trip. The id in a key is only a hint of what to read along: the person counts only when
the session's own (signed) contents name the same id.
"""

from __future__ import annotations

from typing import Any

from django.contrib.sessions.backends.base import CreateError, SessionBase, UpdateError

from accounts.selectors import person_with_password_queue
from accounts.sessions import session_key_new, session_key_person_id
from strongroom.keyspace import SESSION
from strongroom.store import get_store, text_values

# django-stubs leave out SessionBase's private helpers that Django's own backends use
# (_get_or_create_session_key, _get_new_session_key, _get_session): hence the ignores below.


class SessionStore(SessionBase):
    """A session is one string with a TTL; Django signs and encodes its contents."""

    # (person id, HMGET reply) read with the session when its key names a person.
    person_read: tuple[int, list[str | None]] | None = None

    def _key(self, session_key: str | None = None) -> str:
        key = session_key or self._get_or_create_session_key()  # type: ignore[attr-defined]
        return SESSION.key(session_key=key)

    def load(self) -> dict[str, Any]:
        if not self.session_key:
            self._session_key = None
            return {}
        person_id = session_key_person_id(self.session_key)
        if person_id is None:
            data = get_store().get(self._key(self.session_key))
        else:
            pipe = get_store().pipeline(transaction=False)
            pipe.get(self._key(self.session_key))
            person_with_password_queue(pipe, person_id=person_id)
            data, person = pipe.execute()
            self.person_read = (person_id, text_values(person))
        if data is None:
            self._session_key = None
            return {}
        return self.decode(data)

    def _get_new_session_key(self) -> str:
        # No EXISTS probe (Django's way, one round trip): create() writes with SET NX and
        # draws again on a collision.
        return session_key_new(getattr(self, "_session_cache", {}))

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
        written = get_store().set(
            self._key(self.session_key),
            data,
            ex=self.get_expiry_age(),
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
