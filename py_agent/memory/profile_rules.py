"""The user profile in a session's memory: what a session shows of it, what a pass changes.

- **What a session shows** (:func:`shown_facts`): a session that is not private shows the
  profile's facts that are not its own key facts already (a fact it contributed is shown
  once, as its own), those of highest priority first (``fact_priority``, then the newest)
  within ``profile_max_tokens``. A private session neither shows nor changes the profile.
  An unconfirmed fact (one taken from untrusted text, :attr:`ProfileFact.unconfirmed`) is
  shown by no session until the user confirms it.
- **Consolidation across sessions**: the fact extractor sees the session's own facts
  (ids "f…") and the profile's facts it shows (ids "p…") as one list, so an update,
  a retraction or a same-subject conflict works on a fact from another session exactly
  as on one of this session (:func:`~py_agent.memory.facts.consolidate`, unchanged);
  :func:`own_facts` takes the profile's facts back out of the result.
- **What a pass changes** (:func:`profile_after_pass`): a profile fact superseded or
  retracted, directly or through this session's own copy of it, leaves the profile and
  is remembered as removed (so the session it came from drops its copy too,
  :func:`py_agent.profile.reconcile`); each of the session's facts of a lasting kind
  that is not in the profile yet enters it, with the turn that said it.
- **Forgotten stays forgotten** (:func:`block_forgotten`): a fact the user forgot is not
  taken again from the turns of its session that said it (a later turn saying it again
  is news, and is taken).
"""

from __future__ import annotations

from typing import Iterable, Sequence

from ..budget import MemoryPolicy
from ..profile import ProfileFact, UserProfile, removal, with_removed
from ..prompting import PROFILE_HEADING
from ..state import Fact, FactChange, SessionState, Turn, now_ms
from ..tokens import TokenCounter
from .fact_rules import carried_by, stated_in

BLOCKED_REASON = ("the user made py-agent forget this; it is not taken again from the turn "
                  "that said it")


def shown_facts(profile: UserProfile, state: SessionState, policy: MemoryPolicy,
                counter: TokenCounter) -> list[Fact]:
    """The profile's facts the prompts of ``state``'s session show, in the profile's order
    (see the module docstring); none for a private session or with the profile off."""
    if not policy.user_profile or state.private or not profile.facts:
        return []
    own_ids = {f.id for f in state.facts}
    own_keys = {f.key() for f in state.facts}
    # An unconfirmed fact (taken from untrusted text) waits for the user: no chat shows it.
    candidates = [p for p in profile.facts if not p.unconfirmed
                  and not (p.session_id == state.session_id and p.fact_id in own_ids)
                  and p.key() not in own_keys and p.id not in own_ids]
    order = policy.fact_priority
    ranked = sorted(candidates, reverse=True, key=lambda p: (
        len(order) - order.index(p.category) if p.category in order else 0, p.at))
    room = policy.profile_max_tokens - counter.count(PROFILE_HEADING) - 8
    chosen: set[str] = set()
    for fact in ranked:
        cost = counter.count(f"- [{fact.category}] {fact.text}") + 1
        if cost > room:
            continue
        room -= cost
        chosen.add(fact.id)
    return [p.as_fact() for p in profile.facts if p.id in chosen]


def own_facts(facts: Iterable[Fact], shown: Iterable[Fact]) -> list[Fact]:
    """The session's own facts among ``facts`` (a consolidation of its own and the shown
    profile facts ``shown``)."""
    profile_ids = {f.id for f in shown}
    return [f for f in facts if f.id not in profile_ids]


def stated_turns(facts: Iterable[Fact], turns: Sequence[Turn]) -> dict[str, int]:
    """For each fact, the turn of ``turns`` that said it (see
    :func:`~py_agent.memory.fact_rules.stated_in`)."""
    found = {}
    for fact in facts:
        turn_id = stated_in(fact, turns)
        if turn_id is not None:
            found[fact.id] = turn_id
    return found


def block_forgotten(facts: list[Fact], added: Iterable[Fact], profile: UserProfile,
                    session_id: str, stated: dict[str, int]) -> tuple[list[Fact], list[FactChange]]:
    """``facts`` without the ``added`` ones that repeat a fact the user forgot, taken from a
    turn of the same session no later than the one that said it; and a change for each."""
    forgotten = [r for r in profile.removed
                 if r.reason == "forgotten" and r.session_id == session_id and r.turn_id]
    blocked: list[Fact] = []
    for fact in added:
        turn = stated.get(fact.id, fact.turn_id)
        for gone in forgotten:
            old = gone.as_fact()
            if fact.category == old.category and turn is not None and turn <= (gone.turn_id or 0) \
                    and (fact.key() == old.key() or carried_by(old, fact.text)):
                blocked.append(fact)
                break
    ids = {f.id for f in blocked}
    return ([f for f in facts if f.id not in ids],
            [FactChange("retracted", f, BLOCKED_REASON, by="rule") for f in blocked])


def profile_after_pass(profile: UserProfile, state: SessionState, changes: Iterable[FactChange],
                       policy: MemoryPolicy, *, shown: Iterable[Fact] = (),
                       stated: dict[str, int] | None = None,
                       at: float | None = None) -> UserProfile | None:
    """The profile after a pass of ``state``'s session that made ``changes`` (the session's
    state as the pass leaves it; ``shown``: the profile facts its extractor saw;
    ``stated``: the turn that said each new fact). None when nothing changes, and for a
    private session or with the profile off: nothing of such a session enters it."""
    if not policy.user_profile or state.private:
        return None
    at = now_ms() if at is None else at
    shown_ids = {f.id for f in shown}
    session_id = state.session_id
    updated = profile.copy()
    removed = []
    for change in changes:
        if change.action not in ("superseded", "retracted"):
            continue
        if change.fact.id in shown_ids:
            target = updated.find(change.fact.id)
        else:  # the session's own fact: its copy in the profile goes with it
            target = next((p for p in updated.facts if p.session_id == session_id
                           and p.fact_id == change.fact.id), None)
        if target is None:
            continue
        updated.facts = [p for p in updated.facts if p.id != target.id]
        removed.append(removal(target, change.action, at))
    updated.removed = with_removed(profile, removed)
    added = mirror(updated, state, policy, stated or {}, at)
    return updated if removed or added else None


def mirror(profile: UserProfile, state: SessionState, policy: MemoryPolicy,
           stated: dict[str, int], at: float) -> list[ProfileFact]:
    """Put into ``profile`` (in place) each of the session's facts of a lasting kind that is
    neither in it (as its copy, or in the same words) nor removed from it; the added."""
    session_id = state.session_id
    linked = {p.fact_id for p in profile.of_session(session_id)}
    gone = {r.fact_id for r in profile.removed if r.session_id == session_id}
    keys = {p.key() for p in profile.facts}
    added = []
    for fact in state.facts:
        if fact.category not in policy.profile_categories or fact.id in linked \
                or fact.id in gone or fact.key() in keys:
            continue
        # A fact taken from untrusted text enters unconfirmed (ProfileFact.unconfirmed).
        entry = ProfileFact(profile.new_id(), fact.category, fact.text, session_id, fact.id,
                            stated.get(fact.id, fact.turn_id), at, untrusted=fact.untrusted)
        profile.facts.append(entry)
        keys.add(entry.key())
        added.append(entry)
    return added
