"""Django sessions in the store, on the shared connection: one string key per session."""

from __future__ import annotations

from typing import Any

from django.contrib.sessions.backends.base import CreateError, SessionBase, UpdateError

from strongroom.keyspace import SESSION
from strongroom.store import get_store

# django-stubs leave out SessionBase's private helpers that Django's own backends use
# (_get_or_create_session_key, _get_new_session_key, _get_session): hence the ignores below.


class SessionStore(SessionBase):
    """A session is one string with a TTL; Django signs and encodes its contents."""

    def _key(self, session_key: str | None = None) -> str:
        key = session_key or self._get_or_create_session_key()  # type: ignore[attr-defined]
        return SESSION.key(session_key=key)

    def load(self) -> dict[str, Any]:
        if not self.session_key:
            self._session_key = None
            return {}
        data = get_store().get(self._key(self.session_key))
        if data is None:
            self._session_key = None
            return {}
        return self.decode(data)

    def exists(self, session_key: str) -> bool:
        return bool(get_store().exists(self._key(session_key)))

    def create(self) -> None:
        for _ in range(10):
            self._session_key = self._get_new_session_key()  # type: ignore[attr-defined]
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
