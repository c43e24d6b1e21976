"""The user's control over the user profile: see it, edit a fact, forget one, keep a chat private.

- **See** (:meth:`ProfileControl.facts`): every fact, with where it came from (the
  session, the turn that said it, when it entered the profile).
- **Edit**: the fact keeps its source; the session it came from shows the new words as
  its own key fact too (both written in one transaction).
- **Confirm**: a fact taken from untrusted text (a tool's result, page text) enters the
  profile unconfirmed and no chat shows it; confirmed, it is a fact like any other.
- **Forget**: the fact leaves the profile and, in the same transaction, the key facts of
  the session it came from, so no prompt of any session shows it again (live memory
  sessions that read it are rebuilt before their next turn). It is not taken again from
  the turns that said it (:func:`~py_agent.memory.profile_rules.block_forgotten`); saying
  it again later is news and is remembered. The transcript keeps the user's words (and so
  the raw turns and the summary of that one session may still hold them) until the
  session is deleted.
- **Private sessions**: making a session private takes what it gave out of the profile
  (it keeps its own key facts), and from then on it neither reads nor adds to the profile
  (nor, through :attr:`~py_agent.state.SessionInfo.private`, another session's recall).
  Making it not private again puts its lasting facts into the profile at once.

Built from the session table (which writes a session's state and the profile together)
and the memory accountant (for the policy); events go up through ``emit``.
"""

from __future__ import annotations

from ..budget import MemoryAccountant
from ..events import AgentEvent, Emit
from ..profile import (ProfileFact, UnknownProfileFactError, UserProfile, confirm, edit,
                       forget, reconcile, withdraw)
from ..profile_table import ProfileTable
from ..sessions import SessionTable
from ..state import SessionState, now_ms
from .profile_rules import mirror
from .summary import TAG_PATTERN


class ProfileControl:
    """The user's operations on the profile; see the module docstring."""

    def __init__(self, sessions: SessionTable, accountant: MemoryAccountant, emit: Emit) -> None:
        self.sessions, self.accountant, self.emit = sessions, accountant, emit

    @property
    def profiles(self) -> ProfileTable:
        return self.sessions.profiles

    def _check_enabled(self) -> None:
        if not self.profiles.enabled:
            raise RuntimeError("this store keeps no user profile (it has no load_profile "
                               "and save_profile)")

    async def facts(self) -> list[ProfileFact]:
        """Every fact of the profile as stored now, oldest first."""
        if not self.profiles.enabled:
            return []
        return list((await self.profiles.refresh(strict=True)).facts)

    async def _source(self, fact_id: str) -> ProfileFact:
        self._check_enabled()
        fact = (await self.profiles.refresh(strict=True)).find(fact_id)
        if fact is None:
            raise UnknownProfileFactError(fact_id)
        return fact

    async def edit(self, fact_id: str, text: str) -> ProfileFact:
        """Give fact ``fact_id`` new words (whitespace collapsed; ValueError for an empty,
        overlong or markup-bearing text; :class:`UnknownProfileFactError` for an unknown
        id). Returns the edited fact."""
        if isinstance(text, str) and TAG_PATTERN.search(text):
            raise ValueError("a fact's text must not contain the prompt's markup tags")
        source = await self._source(fact_id)

        def change(state: SessionState | None,
                   profile: UserProfile) -> tuple[SessionState | None, UserProfile]:
            edited = edit(profile, fact_id, text)
            return (None if state is None else reconcile(state, edited)), edited

        _, profile = await self.sessions.save_with_profile(source.session_id, change)
        await self._changed(source.session_id, profile, "edited")
        edited = profile.find(fact_id)
        assert edited is not None
        return edited

    async def confirm(self, fact_id: str) -> ProfileFact:
        """Confirm fact ``fact_id``, taken from untrusted text: from now on it is a profile
        fact like any other, shown in every chat that is not private, and its chat's own
        copy is no longer marked (one transaction). :class:`UnknownProfileFactError` for
        an unknown id."""
        source = await self._source(fact_id)

        def change(state: SessionState | None,
                   profile: UserProfile) -> tuple[SessionState | None, UserProfile]:
            confirmed = confirm(profile, fact_id)
            return (None if state is None else reconcile(state, confirmed)), confirmed

        _, profile = await self.sessions.save_with_profile(source.session_id, change)
        await self._changed(source.session_id, profile, "confirmed")
        confirmed = profile.find(fact_id)
        assert confirmed is not None
        return confirmed

    async def forget(self, fact_id: str) -> ProfileFact:
        """Forget fact ``fact_id`` everywhere (see the module docstring); the forgotten
        fact. :class:`UnknownProfileFactError` for an unknown id."""
        source = await self._source(fact_id)

        def change(state: SessionState | None,
                   profile: UserProfile) -> tuple[SessionState | None, UserProfile]:
            forgotten = forget(profile, fact_id)
            return (None if state is None else reconcile(state, forgotten)), forgotten

        _, profile = await self.sessions.save_with_profile(source.session_id, change)
        await self._changed(source.session_id, profile, "forgotten")
        return source

    async def set_private(self, session_id: str, private: bool) -> None:
        """Make ``session_id`` private (or not); a session that does not exist yet is
        created, so a chat can be private from its first message."""
        if not isinstance(session_id, str) or not session_id.strip():
            raise ValueError("session_id must be a non-empty string")
        policy = self.accountant.policy
        changed_profile = False

        def change(state: SessionState | None,
                   profile: UserProfile) -> tuple[SessionState | None, UserProfile]:
            nonlocal changed_profile
            assert state is not None  # created if missing
            state.private = private
            if not self.profiles.enabled:
                return state, profile
            before = profile.to_dict()
            if private:
                profile = withdraw(profile, session_id)
            elif policy.user_profile:
                mirror(profile, state, policy, {}, now_ms())
            changed_profile = profile.to_dict() != before
            return state, profile

        if self.profiles.enabled:
            await self.sessions.save_with_profile(session_id, change, create=True)
        else:
            await self.sessions.set_private(session_id, private)
        await self.emit(AgentEvent("session_private", session_id, {"private": private}))
        if changed_profile:
            await self._changed(session_id, self.profiles.current, "private" if private
                                else "shared")

    async def _changed(self, session_id: str, profile: UserProfile, action: str) -> None:
        await self.emit(AgentEvent("profile_updated", session_id, {
            "version": profile.version, "facts": len(profile.facts), "by": "user",
            "action": action}))
