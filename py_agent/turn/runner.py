"""One turn, top to bottom: open it, retrieve tools, make room, loop, save, schedule memory.

1. **Open**: read the session (a session whose storage cannot be read goes on in
   memory, detached), and archive the user's message at once as an unfinished
   ("interrupted") turn that the final save replaces, so a reload never loses it.
2. **Retrieve** the tools for the message from the toolbox's snapshot (a tool server
   still connecting is waited for, up to a bound; the previous turn helps a follow-up).
   Tools reach the agent through each call's context
   (:mod:`py_agent.turn.tool_services`): the built-in ``recall`` searches the archive
   from this turn, ``compact`` asks for a compaction after the answer.
3. **Recall and make room**: the step base session exists and the memory policy in
   use is the one planned with it (:meth:`~py_agent.memory.engine.MemoryEngine.plan`),
   the archived turns that match the message are recalled
   (:mod:`py_agent.turn.recalled`), the message fits the model, and the raw turns fit
   beside it (:meth:`~py_agent.memory.engine.MemoryEngine.make_room`).
4. **Loop** (:mod:`py_agent.turn.loop`) on a clone of the chat's memory session or
   of the base (:mod:`py_agent.turn.opener`), starting from the first prompt
   (:mod:`py_agent.turn.first_prompt`).
5. **Save** the turn, whatever happened: answered, "incomplete" (the step cap),
   "error" (with a message saying why), or "stopped"; a failed write keeps it in
   memory, written with the next one.
6. **Schedule** memory upkeep in the background.

The turn's own data (its chat, message, stop button, id, offered tools) travels as
its :class:`~py_agent.turn.context.TurnContext`, handed down with each call; nothing
of a turn is written onto a part that the turns of other chats share. Events go to
the agent's ``emit`` and the caller's own handler; nothing here reads or writes the
agent.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

from ..bases import BaseSessions
from ..attachments import AttachmentRecord, Scaler
from ..boundary import describe
from ..events import AgentEvent, Emit, EventHandler, deliver, log
from ..budget import MemoryAccountant
from ..embedding import EmbedderSlot
from ..memory.engine import MemoryEngine
from ..message_list import media_tokens
from ..model import (InputNotSupportedError, ModelError, ModelNetworkError, ModelTimeoutError,
                     ModelUnavailableError, Purpose, QuotaExceededError, destroy_quietly)
from ..prompting import NONE_TOOL
from ..recall.archive import ArchiveRecall
from ..results import RunResult
from ..retrieval import PreviousTurn, ScoredTool, ToolRetriever
from ..sessions import SessionTable
from ..state import SessionState, Turn
from ..tools import Toolbox, ToolboxSnapshot
from ..waiting import TurnAborted, bounded
from . import attached
from .context import TurnContext
from .first_prompt import TurnPrompt, without_memory
from .loop import TurnLoop, call_context, model_call, run_turn
from .approval import ApprovalGate, Approvals, Approver
from .opener import TurnSessions
from .policies import StepPolicy, ToolPolicy
from .recalled import (Recalled, described, hit_reason, in_prompt, recall_for_message,
                       recall_for_tool)
from .tool_choice import ToolChoice
from .tool_runner import SyncRunner, run_tool
from .tool_services import AgentModel, Search, TurnMemory

# How long a turn waits for tool sources that have not listed yet (a tool server still
# connecting at start): a few seconds, not the whole connect timeout.
TOOL_SOURCES_WAIT_S = 5.0
# How long scaling one picture down may take (the page's worker, or Pillow).
SCALE_TIMEOUT_S = 30.0


@dataclass
class TurnSettings:
    """The knobs of every turn (see :class:`~py_agent.Agent` for each)."""

    tool_policy: ToolPolicy
    step_policy: StepPolicy
    max_steps: int
    sync_tool_runner: SyncRunner | None = None
    # Who is asked before a consequential call (None: nobody: such calls are refused),
    # and the tools the user allowed for a whole chat.
    approver: Approver | None = None
    approvals: Approvals = field(default_factory=Approvals)
    tool_sources_wait_s: float = TOOL_SOURCES_WAIT_S
    # Scales a picture too large for the window (py_agent.attachments.scaling); None:
    # such a picture is refused, saying so.
    image_scaler: Scaler | None = None


class TurnRunner:
    """Runs the turns of an agent's sessions, one at a time per session.

    Args:
        sessions: the session table (turns are saved through it).
        bases: the base model sessions (the step base is cloned for each turn).
        memory: the memory engine (room before the loop, upkeep after it).
        accountant: counts tokens and renders the memory.
        toolbox: the agent's tools; each turn reads its snapshot.
        settings: policies and the step cap.
        emit: the agent's own event handler.
        calls: model calls counted by purpose.
        recall: the archive recall index (None: no automatic recall, no recall tool).
        top_k: how many tools the retriever offers.
        embedder: the agent's embedder, for sentence vectors in tool choice (None: off).
    """

    def __init__(self, sessions: SessionTable, bases: BaseSessions, memory: MemoryEngine,
                 accountant: MemoryAccountant, toolbox: Toolbox,
                 settings: TurnSettings, emit: Emit, calls: Counter[str], *,
                 recall: ArchiveRecall | None = None, top_k: int = 3,
                 embedder: EmbedderSlot | None = None) -> None:
        self.sessions, self.bases, self.memory = sessions, bases, memory
        self.accountant, self.toolbox, self.settings = accountant, toolbox, settings
        self.emit, self.calls, self.recall, self.top_k = emit, calls, recall, top_k
        self.model = AgentModel(bases, accountant, calls)
        self.tool_choice = ToolChoice(top_k, embedder)

    def retriever(self, snapshot: ToolboxSnapshot | None = None) -> ToolRetriever:
        """The retriever over ``snapshot``'s tools (the toolbox's now), rebuilt only when
        the tools changed."""
        return self.tool_choice.retriever(snapshot or self.toolbox.snapshot())

    async def run(self, turn: TurnContext, *,
                  on_event: EventHandler | None = None) -> RunResult:
        """Answer ``turn.message`` (already cleaned) in ``turn.session_id``; never raises
        for model, tool or storage trouble (see the module docstring)."""
        async with self.sessions.turn_lock(turn.session_id):
            return await self._run(turn, on_event)

    async def _run(self, turn: TurnContext, on_event: EventHandler | None) -> RunResult:
        async def emit(event: AgentEvent) -> None:
            await self.emit(event)
            await deliver([on_event], event)

        session_id, message, abort = turn.session_id, turn.message, turn.abort
        media = turn.attachments
        kinds = frozenset(a.kind for a in media)
        records = [AttachmentRecord.of(a) for a in media]
        if media:   # kept before the turn is archived, so a reload finds them
            await attached.keep(self.sessions.store, session_id, media, records)
        entry = await self._open(session_id, message, emit, records)
        turn = replace(turn, turn_id=entry.id)
        # The turns a prompt of this session holds already: never recalled into it.
        held = in_prompt(session_id, self.sessions.state(session_id), turn.turn_id)
        offered = await self._retrieve(session_id, message, emit)
        turn = replace(turn, offered=tuple(offered))
        turn_memory = TurnMemory(self._recall_search(session_id, held, emit))
        count = self.accountant.counter.count

        async def media_clone(wanted: frozenset[str]):
            return await (await self.bases.media_base(wanted)).clone()

        opener = TurnSessions(self.memory.live, session_id,
                              lambda: self.bases.existing(Purpose.STEP),
                              lambda: self.bases.clone(Purpose.STEP),
                              count(without_memory(message, offered)), media_clone, kinds)
        prompt = TurnPrompt(message, offered, self.accountant, free_tokens=self._free_tokens,
                            memory=lambda: (None if opener.uses_memory
                                            else self.sessions.state(session_id)),
                            profile=self.memory.profile_facts)
        settings = self.settings
        loop = TurnLoop(turn=turn,
                        first_prompt=lambda steps, tight: attached.prompt_with(
                            prompt.build(steps, tight), media),
                        new_session=opener.new_session, keep_session=bool(media),
                        media_session=opener.media_session, session_kinds=kinds,
                        media_support=self.bases.media_support,
                        emit=emit, tool_policy=settings.tool_policy, max_steps=settings.max_steps,
                        step_policy=settings.step_policy,
                        sync_tool_runner=settings.sync_tool_runner,
                        constraints=self.bases.constraints(), gate=self._gate(turn),
                        model=self.model, memory=turn_memory,
                        read_untrusted=lambda: prompt.untrusted + (
                            self.memory.live.untrusted(session_id) if opener.uses_memory
                            else []))
        tools_offered = [(s.tool.name, s.score) for s in offered]

        def failed(status: str, answer: str, error: str | None = None) -> RunResult:
            return RunResult(answer=answer, steps=loop.steps, session_id=session_id,
                             turn_id=turn.turn_id, status=status,  # type: ignore[arg-type]
                             error=error, tools_offered=tools_offered)

        try:
            if media:
                await self._check_media(kinds)
            # The model's step base and the memory policy planned with it (may download:
            # no deadline but the stop button).
            await bounded(self.memory.plan(), abort=abort)
            # After the plan: the room for recalled turns is the policy's in use.
            recalled = await self._recall(session_id, message, held, emit)
            prompt.recalled, prompt.recalled_untrusted = recalled.text, recalled.untrusted
            if prompt.recalled and not self._fits(count(prompt.least())):
                # the message alone is long: it goes first
                prompt.recalled, prompt.recalled_untrusted = "", []
            # the least the first prompt carries (its attachments' share measured); a
            # picture too large for the window is scaled down first
            media_cost = 0
            if media:
                media, media_cost = await self._fit_media(media, prompt.least(), abort)
                turn = replace(turn, attachments=media)
            fixed = count(prompt.least()) + media_cost
            self._check_message_fits(fixed)
            opener.prompt_tokens = fixed
            await self.memory.make_room(session_id, fixed)
            await self._calibrate(prompt.build(), turn.turn_id, abort)
            result = await run_turn(loop)
            self.calls[Purpose.STEP.value] += len(result.steps)
        except TurnAborted:
            result = failed("stopped", "")
        except asyncio.CancelledError:  # the caller gave up on the turn: keep it as stopped
            entry.status, entry.steps = "stopped", [s.record() for s in loop.steps]
            await asyncio.shield(self._save(session_id, entry, emit))
            raise
        except Exception as exc:  # model errors, and any bug: the turn fails, saved
            if not isinstance(exc, (ModelError, ValueError)):
                log.exception("turn %s of %s failed", turn.turn_id, session_id)
            result = failed("error", turn_error_text(exc), f"{type(exc).__name__}: {describe(exc)}")
            await emit(AgentEvent("error", session_id, {"message": result.answer,
                                                        "kind": type(exc).__name__}))
        result.prompt_tokens = prompt.tokens
        await emit(AgentEvent("answer", session_id, {"turn_id": turn.turn_id,
                                                     "text": result.answer,
                                                     "status": result.status}))
        if media:   # after the answer: what memory will say of them
            await self._describe(loop, media, records)
        entry.answer, entry.status = result.answer, result.status  # type: ignore[assignment]
        entry.steps = [s.record() for s in result.steps]
        result.saved = await self._save(session_id, entry, emit)
        result.turn_id = entry.id  # renumbered if another tab took the id while storage failed
        self.memory.live.turn_finished(session_id)
        focus = "; ".join(turn_memory.compaction_focus) or None
        asked = turn_memory.compaction_requests > 0
        result.compaction_scheduled = self.memory.schedule(
            session_id, "tool" if asked else "auto", focus, force=asked)
        return result

    def _gate(self, turn: TurnContext) -> ApprovalGate:
        """The turn's approval gate: its chat, its approver (or the agent's), the chat's
        standing approvals. Made once per turn (or per call from outside a turn)."""
        return ApprovalGate(turn.session_id, turn.approver or self.settings.approver,
                            self.settings.approvals)

    async def call_tool(self, name: str, tool_input: Any, session_id: str, *,
                        on_event: EventHandler | None = None) -> str:
        """Run one of the agent's tools outside a turn (for another agent: the browser's,
        through WebMCP), guarded as in a turn: a consequential one asks the user first,
        as a question of chat ``session_id``. The observation text; ValueError for a
        tool the agent does not have."""
        chosen = self.toolbox.snapshot().named(name)
        if chosen is None:
            raise ValueError(f"the agent has no tool named {name!r}")

        async def tell(kind: str, data: dict[str, Any]) -> None:
            event = AgentEvent(kind, session_id, data)  # type: ignore[arg-type]
            await self.emit(event)
            await deliver([on_event], event)

        turn = TurnContext(session_id, "")
        context = call_context(turn, chosen.name, tell, self.model, TurnMemory(None))
        outcome = await run_tool(chosen, tool_input or {}, self.settings.tool_policy,
                                 self.settings.sync_tool_runner, gate=self._gate(turn),
                                 context=context, tell=tell)
        return outcome.observation

    # ------------------------------------------------------------ the steps

    async def _media_tokens(self, text: str, media: tuple, abort: asyncio.Event | None) -> int:
        """What the attachments add to the first prompt: measured by the model made to
        take them (the Prompt API's ``measureContextUsage``) when it can say, else
        estimated (:func:`~py_agent.message_list.media_tokens`)."""
        try:
            base = await self.bases.media_base(frozenset(m.kind for m in media))
            exact = await model_call(base.measure(attached.prompt_with(text, media)),
                                     self.settings.step_policy, abort, "count tokens")
            plain = await model_call(base.measure(text), self.settings.step_policy, abort,
                                     "count tokens")
        except ModelError:
            return media_tokens(media)
        if exact is None or plain is None:
            return media_tokens(media)
        return max(0, exact - plain)

    async def _fit_media(self, media: tuple, text: str,
                         abort: asyncio.Event | None) -> tuple[tuple, int]:
        """The turn's attachments, their pictures scaled down (half each side, at most
        four times) while the first prompt would not fit the window; as they are when
        there is no scaler or scaling does not help (then they are refused, saying so)."""
        scaler = self.settings.image_scaler
        scaled = False
        text_tokens = self.accountant.counter.count(text)
        cost = await self._media_tokens(text, media, abort)
        for _ in range(4):
            if self._fits(text_tokens + cost) or scaler is None:
                break
            pictures = [m for m in media if m.kind == "image" and (m.width or 0) > 64]
            if not pictures:
                break
            try:
                media = tuple([await bounded(scaler(m, 0.5), timeout=SCALE_TIMEOUT_S,
                                             abort=abort) if m in pictures else m
                               for m in media])
            except TurnAborted:
                raise
            except Exception as exc:   # a picture the scaler cannot read: refused as it is
                log.warning("could not scale a picture down: %s", describe(exc))
                break
            scaled = True
            cost = await self._media_tokens(text, media, abort)
        need, room = text_tokens + cost, self._room()
        if need > room:
            how = "even scaled down" if scaled else \
                "and nothing here can scale them (pip install pillow)" if scaler is None \
                else "and they could not be scaled"
            error = QuotaExceededError(
                f"The attachments are too large for the model's context window {how} "
                f"({need} tokens, room for about {room}); send fewer or smaller ones.",
                requested=need, quota=room)
            error.speaks_to_user = True
            raise error
        return media, cost

    async def _check_media(self, kinds: frozenset[str]) -> None:
        """Refuse, before any prompt, attachments of a kind the model cannot take; the
        message names the model and says why (the turn is kept, with them)."""
        support = await self.bases.media_support()
        missing = sorted(kinds - support.takes)
        if missing:
            raise InputNotSupportedError(support.reason(missing[0]), kinds=frozenset(missing),
                                         model=support.model)

    async def _describe(self, loop: TurnLoop, media: tuple, records: list[AttachmentRecord]
                        ) -> None:
        """Each attachment's description, from the turn's session when it answered (a
        plain one otherwise); the session is destroyed after."""
        session, loop.kept = loop.kept, None
        if session is None:
            for attachment, record in zip(media, records):
                record.description = attached.plain_description(attachment)
            return
        try:
            await attached.describe(session, media, records, self.settings.step_policy)
        finally:
            await destroy_quietly(session, "a turn's session")

    async def _open(self, session_id: str, message: str, emit: Emit,
                    attachments: list[AttachmentRecord] | None = None) -> Turn:
        """Read the session, archive the user's message as an unfinished turn, announce it."""
        try:
            await self.sessions.open(session_id, create=True)
        except Exception as exc:  # the store could not be read: go on in memory
            self.sessions.detach(session_id)
            await emit(AgentEvent("storage_error", session_id, {
                "message": f"Could not read this session from storage ({describe(exc)}). The "
                           "conversation goes on in memory but is not saved; export it "
                           "to keep it.", "kind": getattr(exc, "kind", "unknown")}))
        # Replaced by the final save; until then a reload shows the message as interrupted.
        turn = Turn(id=0, user=message, answer="", status="interrupted",
                    attachments=list(attachments or []))
        await self._save(session_id, turn, emit, allocate=True)
        started = {"turn_id": turn.id, "message": message}
        if turn.attachments:
            started["attachments"] = [a.to_dict() for a in turn.attachments]
        await emit(AgentEvent("turn_started", session_id, started))
        return turn

    async def _retrieve(self, session_id: str, message: str, emit: Emit) -> list[ScoredTool]:
        """The tools offered for ``message``; sources still listing are waited for up to
        ``tool_sources_wait_s``, and the event names those that were not ready."""
        snapshot = await self.toolbox.settled(self.settings.tool_sources_wait_s)
        offer = await self.tool_choice.offer(snapshot, message,
                                             previous_turn(self.sessions.state(session_id)))
        await emit(AgentEvent("tools_retrieved", session_id, {"tools": [
            {"name": s.tool.name, "score": s.score, "pinned": s.pinned, "why": s.why.to_dict()}
            for s in offer.tools], "not_ready": [self._source_label(key)
                                                 for key in snapshot.pending],
            "dense": offer.dense}))
        return offer.tools

    def _source_label(self, key: str) -> str:
        """A tool source as the trace names it: its server's name, else its key."""
        source = self.toolbox.source(key)
        return (source.origin.server if source is not None else "") or key

    async def _recall(self, session_id: str, message: str, held: set[tuple[str, int]],
                      emit: Emit) -> Recalled:
        """Automatic recall for the message (see :mod:`py_agent.turn.recalled`), announced
        with why each turn was or was not recalled; never fails the turn."""
        if self.recall is None:
            return Recalled()
        policy = self.accountant.policy
        try:
            recalled = await recall_for_message(
                self.recall, session_id, message, held, k=policy.recall_k,
                min_coverage=policy.recall_min_coverage, budget=policy.recall_tokens,
                count=self.accountant.counter.count, now=self.recall.clock())
        except Exception:
            log.exception("automatic recall failed for a turn of %s", session_id)
            recalled = Recalled()
        self.recall.remember(session_id, recalled.hits)
        if recalled.considered:
            await emit(AgentEvent("recalled", session_id, {
                "source": "auto", "query": message, "hits": recalled.considered,
                "tokens": recalled.tokens, "budget": policy.recall_tokens,
                "min_coverage": policy.recall_min_coverage, "ms": round(recalled.ms, 2),
                "dense": self.recall.dense_state()}))
        return recalled

    def _recall_search(self, session_id: str, held: set[tuple[str, int]],
                       emit: Emit) -> Search | None:
        """The turn's recall for the ``recall`` tool: the archive from this chat, leaving
        out the turns the prompt holds; each search announced (None: no archive index)."""
        recall = self.recall
        if recall is None:
            return None

        async def search(query: str) -> tuple[str, list[str]]:
            text, hits = await recall_for_tool(recall, session_id, str(query), held,
                                               recall.clock())
            await emit(AgentEvent("recalled", session_id, {
                "source": "tool", "query": str(query),
                "hits": [described(h, recall.title, shown=True, reason="asked for")
                         for h in hits],
                "tokens": self.accountant.counter.count(text)}))
            return text, [hit_reason(h, session_id, recall.title) for h in hits]

        return search

    def _free_tokens(self) -> int:
        """The step base's window less what its prefix takes."""
        window, used = self.bases.window(Purpose.STEP)
        return window - used

    def _room(self) -> int:
        """What a first prompt may take at most: the window less the prefix and half
        the turn's reserve."""
        return self._free_tokens() - self.accountant.policy.reserved_turn_tokens // 2

    def _fits(self, need: int) -> bool:
        return need <= self._room()

    def _check_message_fits(self, need: int) -> None:
        """Fail the turn clearly if the message and its tools alone overflow the window."""
        room = self._room()
        if need > room:
            raise QuotaExceededError(f"the message is too long for the model ({need} tokens, "
                                     f"room for about {room})", requested=need, quota=room)

    async def _calibrate(self, text: str, turn_id: int, abort: asyncio.Event | None) -> None:
        """Teach the token counter from an exact count, often early and then now and then."""
        counter = self.accountant.counter
        if counter.samples >= 8 and turn_id % 10:
            return
        try:
            exact = await model_call(self.bases.existing(Purpose.STEP).measure(text),
                                     self.settings.step_policy, abort, "count tokens")
        except ModelError:
            return
        counter.calibrate(text, exact)

    async def _save(self, session_id: str, turn: Turn, emit: Emit, *,
                    allocate: bool = False) -> bool:
        """Save the turn through the session table (``allocate``: give it the next id);
        True once written. A failed write is announced; the turn is kept in memory."""
        problem = await self.sessions.save_turn(session_id, turn, allocate=allocate)
        if self.sessions.is_detached(session_id):
            return False
        if problem is not None:
            await emit(AgentEvent("storage_error", session_id, {
                "message": f"Could not save this turn ({describe(problem)}); it is kept in "
                           "memory and will be saved with the next one.",
                "kind": getattr(problem, "kind", "unknown"),
                "unsaved": self.sessions.unsaved(session_id)}))
            return False
        if turn.status != "interrupted":
            await emit(AgentEvent("turn_saved", session_id, {"turn_id": turn.id, "unsaved": 0}))
        return True


def previous_turn(state: SessionState | None) -> PreviousTurn | None:
    """The last raw turn as a weaker second query, so a follow-up finds its tools."""
    if state is None or not state.recent_turns:
        return None
    last = state.recent_turns[-1]
    tools = tuple(dict.fromkeys(s.tool for s in last.steps
                                if s.tool and s.tool != NONE_TOOL and not s.corrective))
    return PreviousTurn(last.user, tools)


def turn_error_text(exc: Exception) -> str:
    """What the user reads when a turn failed: what happened and what to do."""
    if isinstance(exc, InputNotSupportedError):
        return (f"{describe(exc, 600)} Your message and its attachments are kept: send it "
                "again without them, or with a model that takes them.")
    if isinstance(exc, QuotaExceededError):
        if exc.speaks_to_user:
            return describe(exc, 600)
        return ("That is too long for the on-device model's context window. "
                "Please shorten the message or split it up.")
    if isinstance(exc, ModelTimeoutError):
        return (f"The model did not answer in time ({describe(exc)}). Your message is "
                "saved; please try again.")
    speaks = isinstance(exc, ModelError) and exc.speaks_to_user
    if isinstance(exc, ModelUnavailableError) and not speaks:
        return ("The on-device model is not available right now, so I can't answer. "
                "Your message is saved; try again once the model is ready.")
    if isinstance(exc, ModelNetworkError) and not speaks:
        return "The model could not be reached (it may still be downloading). Please try again."
    if isinstance(exc, (ModelError, ValueError)):
        return f"Something went wrong while asking the model: {describe(exc)}"
    return (f"Something went wrong in the agent ({type(exc).__name__}: {describe(exc)}). "
            "Your message is saved.")
