"""The user profile of one store, as an agent holds it: read, cached, written conditionally.

Every session reads the profile, and any tab or process on the same store may change it
(a memory pass of another session, the user forgetting a fact in another tab), so it is
read again before each turn, each memory inspection and each write; a read that fails
keeps the copy in memory (the profile is never a reason for a turn to fail).

Writes go through the store with the version the profile was read at; a write made from
an outdated copy is refused (:class:`~py_agent.store.StateConflictError`), and the writer
reads again, re-applies its change and writes again. Writes that must go with a session's
state in one transaction are made by :class:`~py_agent.sessions.SessionTable`.

A store without ``load_profile`` and ``save_profile`` (one written before profiles
existed) has no profile: :attr:`ProfileTable.enabled` is False and the profile stays empty.
"""

from __future__ import annotations

from typing import Callable

from .events import log
from .profile import UserProfile
from .store import CONFLICT_RETRIES, StateConflictError, Store


class ProfileTable:
    """The cached profile of ``store``; see the module docstring."""

    def __init__(self, store: Store, *, conflict_retries: int = CONFLICT_RETRIES) -> None:
        self.store = store
        self.conflict_retries = conflict_retries
        self.enabled = all(callable(getattr(store, name, None))
                           for name in ("load_profile", "save_profile"))
        self._profile = UserProfile()
        self._listeners: list[Callable[[UserProfile], None]] = []

    @property
    def current(self) -> UserProfile:
        """The profile as last read or written here (no storage read)."""
        return self._profile

    def when_changed(self, listener: Callable[[UserProfile], None]) -> None:
        """Call ``listener(profile)`` whenever a newer profile is taken."""
        self._listeners.append(listener)

    def take(self, profile: UserProfile) -> None:
        """Keep ``profile`` (just written, or read) if it is newer than the one held."""
        newer = profile.version > self._profile.version
        if newer or (profile.version == 0 and self._profile.version):  # or the data was cleared
            self._profile = profile
            for listener in self._listeners:
                listener(profile)

    async def refresh(self, *, strict: bool = False) -> UserProfile:
        """Read the stored profile and take it if it is newer. A failed read keeps the one
        in memory (logged), unless ``strict``: then it raises."""
        if not self.enabled:
            return self._profile
        try:
            stored = await self.store.load_profile()  # type: ignore[attr-defined]
        except Exception:
            if strict:
                raise
            log.warning("could not read the user profile; using the copy in memory")
            return self._profile
        self.take(stored)
        return self._profile

    async def update(self, change: Callable[[UserProfile], UserProfile]) -> UserProfile:
        """Apply ``change`` to the stored profile and write it, again on a conflict; the
        written profile. ``change`` gets a copy it may return changed (it may raise to
        refuse: nothing is written then)."""
        if not self.enabled:
            raise RuntimeError("this store keeps no user profile")
        problem: Exception | None = None
        for _ in range(self.conflict_retries):
            profile = await self.refresh(strict=True)
            updated = change(profile.copy())
            try:
                await self.store.save_profile(updated)  # type: ignore[attr-defined]
            except StateConflictError as exc:
                problem = exc
                continue
            self.take(updated)
            return updated
        assert problem is not None
        raise problem
