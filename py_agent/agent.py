"""The Agent: runs turns, keeps each session's memory, compacts it in the background.

A turn: retrieve tools, clone the prefilled base session, run the ReAct loop,
return the answer. Then the turn is committed (archive and state in one write)
and, if the raw turns have outgrown their budget, compaction starts in the
background, one at a time per session, committing only the turns it summarized.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import AsyncIterator, Iterable

from ._loop import COMPACT_TOOL, STEP_TIMEOUT_S, TurnAborted, TurnContext, condensed_steps, run_turn
from ._tool_runner import ToolPolicy
from ._compaction_prompts import summary_messages
from .compaction import DESTROY_TIMEOUT_S, Compactor
from .events import AgentEvent, EventHandler, deliver, log
from .facts import facts_messages
from ._prefix import PrefixPlan, PrefixPlanner
from .memory import Budget, MemoryAccountant, MemoryPolicy
from .model import LanguageModel, ModelError, ModelSession, Purpose, QuotaExceededError
from .prompting import NONE_TOOL, SYSTEM_INSTRUCTION, MemoryView, first_prompt
from .results import CompactionReport, MemoryState, RunResult, StepTrace
from .retrieval import PreviousTurn, ToolRetriever
from .state import CompressionRecord, SessionState, Turn, now_ms
from .store import InMemoryStore, Store, UnknownSessionError
from .tokens import TokenCounter
from .tools import Tool, tool
from .transfer import SessionBundle, id_candidates, parse_session

# The window assumed for the memory meter before any model session exists: Gemini
# Nano's, as the Prompt API reports it in Chrome (``contextWindow``/``inputQuota``).
DEFAULT_CONTEXT_WINDOW = 9216


def compact_tool() -> Tool:
    """The built-in tool through which the model asks for its memory to be compacted."""

    def compact(focus: str = "") -> str:
        """Compact the conversation memory: summarise older turns to free context room.

        Args:
            focus: what the summary must be sure to keep.

        Examples:
            our chat is very long now, please tidy up your memory
            summarize what we talked about and forget the details
            make room in the context but remember my allergies
        """
        return "scheduled"

    built = tool(compact, keywords=["compact", "compress", "condense", "shorten", "chat history",
                                    "conversation", "context window", "memory full"])
    built.metadata["builtin"] = COMPACT_TOOL
    return built


class Agent:
    """An agent over a Prompt-API-like model, with tools and per-session memory.

    Args:
        model: a :class:`~py_agent.model.LanguageModel` (the browser bridge, or
            :class:`~py_agent.testing.FunctionModel` in tests).
        store: where sessions persist; an :class:`InMemoryStore` by default.
        tools: the registry; the retriever offers the top ``top_k`` per message.
        memory: thresholds for compaction; see :class:`MemoryPolicy`.
        tool_policy: timeout, retries and output cap for tool calls.
        max_steps: iteration cap of one turn.
        step_timeout_s: a step call that gives no answer within this many seconds is
            stopped and the turn ends with an error (None: only the user's Stop ends it).
        on_event: called with every :class:`AgentEvent`, including background ones.
        compact_tool_enabled: offer the built-in ``compact`` tool when it matches.
    """

    def __init__(self, model: LanguageModel, store: Store | None = None,
                 tools: Iterable[Tool] = (), memory: MemoryPolicy | None = None, *,
                 tool_policy: ToolPolicy | None = None, max_steps: int = 7, top_k: int = 3,
                 on_event: EventHandler | None = None, compact_tool_enabled: bool = True,
                 system_instruction: str = SYSTEM_INSTRUCTION,
                 step_timeout_s: float | None = STEP_TIMEOUT_S) -> None:
        if max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        self.model = model
        self.store: Store = store if store is not None else InMemoryStore()
        self.requested_policy = memory or MemoryPolicy()
        # The policy in use: the requested one, or scaled down for a small window.
        self.policy = self.requested_policy
        self.tool_policy = tool_policy or ToolPolicy()
        self.max_steps = max_steps
        self.step_timeout_s = step_timeout_s
        self.on_event = on_event
        registry = list(tools)
        if compact_tool_enabled and not any(t.name == COMPACT_TOOL for t in registry):
            registry.append(compact_tool())
        self.tools = registry
        self.retriever = ToolRetriever(registry, top_k=top_k)
        self.system_instruction = system_instruction
        self.accountant = MemoryAccountant(self.policy, TokenCounter())
        self.model_calls: Counter[str] = Counter()
        self._bases: dict[Purpose, ModelSession] = {}
        self._base_lock = asyncio.Lock()
        self._states: dict[str, SessionState] = {}
        self._unsaved: dict[str, list[Turn]] = {}
        # Sessions whose stored state could not be read: they run in memory and are
        # never written, so an unreadable state is not overwritten by a fresh one.
        self._detached: set[str] = set()
        self._turn_locks: dict[str, asyncio.Lock] = {}
        self._state_locks: dict[str, asyncio.Lock] = {}
        self.compactor = Compactor(self)
        self._import_lock = asyncio.Lock()  # two imports of one file must not pick one id
        # The step prefix (and policy) planned for the model's window on the first turn.
        self.prefix = PrefixPlanner(self.requested_policy, self.accountant.counter,
                                    system_instruction, registry, top_k)

    # ----------------------------------------------------------------- helpers

    def _lock(self, table: dict[str, asyncio.Lock], session_id: str) -> asyncio.Lock:
        return table.setdefault(session_id, asyncio.Lock())

    async def _emit(self, event: AgentEvent, extra: EventHandler | None = None) -> None:
        await deliver([self.on_event, extra], event)

    async def _base(self, purpose: Purpose) -> ModelSession:
        """The prefilled base session for ``purpose``, created once and cloned per use."""
        async with self._base_lock:
            if purpose not in self._bases:
                if purpose is Purpose.STEP:
                    self._bases[purpose] = await self._create_step_base()
                else:
                    prompts = (summary_messages() if purpose is Purpose.SUMMARY
                               else facts_messages())
                    self._bases[purpose] = await self.model.create(initial_prompts=prompts,
                                                                   purpose=purpose)
            return self._bases[purpose]

    def _known_window(self) -> int:
        window = getattr(self.model, "context_window", None)
        if not isinstance(window, int) or isinstance(window, bool) or window <= 0:
            return DEFAULT_CONTEXT_WINDOW
        return window

    async def _create_step_base(self) -> ModelSession:
        """The step base session, with the prefix and policy planned for the model's
        window (see :mod:`py_agent._prefix`); a switch is announced."""
        base = await self.prefix.create_base(self.model, self._known_window())
        plan = self.prefix.current
        self.policy = self.accountant.policy = plan.policy
        if plan.level != "full" or plan.scaled:
            await self._emit(AgentEvent("prefix_planned", "", plan.to_dict()))
        return base

    @property
    def prefix_plan(self) -> PrefixPlan | None:
        """The prefix in use, planned for the model's window when the first turn ran."""
        return self.prefix.current

    async def _clone(self, purpose: Purpose) -> ModelSession:
        return await (await self._base(purpose)).clone()

    async def _state(self, session_id: str, *, create: bool) -> SessionState:
        state = self._states.get(session_id)
        if state is None:
            state = await self.store.load(session_id)
            if state is None:
                if not create:
                    raise UnknownSessionError(session_id)
                state = SessionState(session_id=session_id)
            self._states[session_id] = state
        return state

    # -------------------------------------------------------------------- turns

    async def run(self, prompt: str, session_id: str = "default", *,
                  on_event: EventHandler | None = None,
                  abort: asyncio.Event | None = None) -> RunResult:
        """Answer ``prompt`` in ``session_id``; never raises for model, tool or storage trouble.

        ``abort`` (set it to stop) ends the turn with status "aborted" and saves nothing.
        """
        if not isinstance(prompt, str) or not prompt.strip():
            raise ValueError("prompt must be a non-empty string")
        async with self._lock(self._turn_locks, session_id):
            return await self._run_locked(prompt.strip(), session_id, on_event, abort)

    async def _run_locked(self, message: str, session_id: str, on_event: EventHandler | None,
                          abort: asyncio.Event | None) -> RunResult:
        async def emit(event: AgentEvent) -> None:
            await self._emit(event, on_event)

        try:
            state = await self._state(session_id, create=True)
        except Exception as exc:  # the store could not be read: go on in memory
            state = self._detach(session_id)
            await emit(AgentEvent("storage_error", session_id, {
                "message": f"Could not read this session from storage ({exc}). The "
                           "conversation goes on in memory but is not saved; export it "
                           "to keep it.", "kind": getattr(exc, "kind", "unknown")}))
        turn_id = max(state.next_turn_id, *(t.id + 1 for t in self._unsaved.get(session_id, [])),
                      1)
        await emit(AgentEvent("turn_started", session_id, {"turn_id": turn_id, "message": message}))
        offered = self.retriever.retrieve(message, previous=_previous_turn(state))
        await emit(AgentEvent("tools_retrieved", session_id, {"tools": [
            {"name": s.tool.name, "score": s.score, "pinned": s.pinned, "why": s.why.to_dict()}
            for s in offered]}))

        prompt_tokens = 0

        def build_first_prompt(steps: list[StepTrace], tight: bool) -> str:
            nonlocal prompt_tokens
            base = self._bases[Purpose.STEP]
            fixed = first_prompt(message, offered, MemoryView())
            room = (base.context_window - base.context_usage - self.policy.reserved_turn_tokens
                    - self.accountant.counter.count(fixed))
            extra = condensed_steps(steps, self.policy.micro_compact_chars) if tight else ""
            if tight:
                room = room // 2 - self.accountant.counter.count(extra)
            view, _ = self.accountant.view(state, max(0, room))
            text = first_prompt(message, offered, view)
            if extra:
                text += "\n\n" + extra
            prompt_tokens = self.accountant.counter.count(text)
            return text

        ctx = TurnContext(session_id=session_id, turn_id=turn_id, message=message, tools=offered,
                          first_prompt=build_first_prompt,
                          new_session=lambda: self._clone(Purpose.STEP), emit=emit,
                          tool_policy=self.tool_policy, max_steps=self.max_steps, abort=abort,
                          step_timeout_s=self.step_timeout_s)
        try:
            await self._base(Purpose.STEP)
            await self._check_message_fits(message, offered)
            await self.compactor.make_room(session_id, self.accountant.counter.count(
                first_prompt(message, offered, MemoryView())))
            state = self._states.get(session_id, state)  # as make_room left it
            await self._calibrate(build_first_prompt([], False), turn_id)
            result = await run_turn(ctx)
            self.model_calls[Purpose.STEP.value] += len(result.steps)
        except TurnAborted:
            await emit(AgentEvent("answer", session_id,
                                  {"turn_id": turn_id, "text": "", "status": "aborted"}))
            return RunResult(answer="", steps=[], session_id=session_id, turn_id=turn_id,
                             status="aborted", tools_offered=[(s.tool.name, s.score) for s in offered])
        except (ModelError, ValueError) as exc:
            result = RunResult(answer=_model_error_text(exc), steps=[], session_id=session_id,
                               turn_id=turn_id, status="error", error=f"{type(exc).__name__}: {exc}",
                               tools_offered=[(s.tool.name, s.score) for s in offered])
            await emit(AgentEvent("error", session_id, {"message": result.answer,
                                                        "kind": type(exc).__name__}))
        result.prompt_tokens = prompt_tokens
        await emit(AgentEvent("answer", session_id, {"turn_id": turn_id, "text": result.answer,
                                                     "status": result.status}))
        turn = Turn(id=turn_id, user=message, answer=result.answer,
                    steps=[s.record() for s in result.steps],
                    status="answered" if result.status == "answered" else
                    ("incomplete" if result.status == "incomplete" else "error"))
        result.saved = await self._commit_turn(session_id, turn, emit)
        trigger = "tool" if ctx.compact_requested else "auto"
        focus = "; ".join(ctx.compact_focus) or None
        result.compaction_scheduled = self._maybe_schedule(session_id, trigger, focus,
                                                           force=ctx.compact_requested)
        return result

    def _detach(self, session_id: str) -> SessionState:
        self._detached.add(session_id)
        return self._states.setdefault(session_id, SessionState(session_id=session_id))

    async def _check_message_fits(self, message: str, offered: list) -> None:
        base = self._bases[Purpose.STEP]
        need = self.accountant.counter.count(first_prompt(message, offered, MemoryView()))
        room = base.context_window - base.context_usage - self.policy.reserved_turn_tokens // 2
        if need > room:
            raise QuotaExceededError(f"the message is too long for the model ({need} tokens, "
                                     f"room for about {room})", requested=need, quota=room)

    async def _calibrate(self, text: str, turn_id: int) -> None:
        """Teach the token counter from an exact count, often early and then now and then."""
        counter = self.accountant.counter
        if counter.samples >= 8 and turn_id % 10:
            return
        try:
            exact = await self._bases[Purpose.STEP].measure(text)
        except ModelError:
            return
        counter.calibrate(text, exact)

    async def _commit_turn(self, session_id: str, turn: Turn, emit) -> bool:
        """Add the turn to the state in memory, then write archive and state together.

        A failed write keeps the turn in memory and in a pending list retried with
        the next commit, so the conversation goes on and nothing is lost.
        """
        async with self._lock(self._state_locks, session_id):
            state = self._states[session_id].copy()
            if turn.status != "error":
                state.recent_turns.append(turn)
            state.next_turn_id = turn.id + 1
            state.title = state.title or _title_from(turn.user)
            state.updated_at = now_ms()
            self._states[session_id] = state
            pending = self._unsaved.setdefault(session_id, [])
            pending.append(turn)
            if session_id in self._detached:
                return False
            try:
                await self.store.commit_turn(state, list(pending))
            except Exception as exc:
                kind = getattr(exc, "kind", "unknown")
                await emit(AgentEvent("storage_error", session_id, {
                    "message": f"Could not save this turn ({exc}); it is kept in memory and "
                               "will be saved with the next one.", "kind": kind,
                    "unsaved": len(pending)}))
                return False
            pending.clear()
        await emit(AgentEvent("turn_saved", session_id, {"turn_id": turn.id}))
        return True

    async def stream(self, prompt: str, session_id: str = "default", *,
                     abort: asyncio.Event | None = None) -> AsyncIterator[AgentEvent | RunResult]:
        """Yield each event of the turn as it happens, then the :class:`RunResult`."""
        queue: asyncio.Queue = asyncio.Queue()
        task = asyncio.ensure_future(self.run(prompt, session_id, on_event=queue.put_nowait,
                                              abort=abort))
        task.add_done_callback(lambda _: queue.put_nowait(None))
        while (item := await queue.get()) is not None:
            yield item
        yield task.result()

    # --------------------------------------------------------------- compaction

    def _maybe_schedule(self, session_id: str, trigger: str, focus: str | None, *,
                        force: bool = False) -> bool:
        """Start a background compaction if one is due; see :mod:`py_agent.compaction`."""
        return self.compactor.schedule(session_id, trigger, focus, force=force)

    async def compact(self, session_id: str, focus: str | None = None) -> CompactionReport:
        """Compact now: every turn but the newest ``min_recent_turns`` goes into memory."""
        await self._state(session_id, create=False)
        await self.wait_idle(session_id)
        await self._base(Purpose.STEP)
        async with self._lock(self._turn_locks, session_id):
            return await self.compactor.compact_once(session_id, "manual", focus,
                                                     everything=True)

    async def wait_idle(self, session_id: str | None = None, timeout: float | None = None) -> bool:
        """Wait for background compactions (of one session, or all) to finish, at most
        ``timeout`` seconds; True if none is running any more. Without a timeout the
        wait is still bounded: every model call of a compaction has its own
        (``MemoryPolicy.summary_timeout_s``, ``facts_timeout_s``)."""
        return await self.compactor.wait_idle(session_id, timeout)

    # --------------------------------------------------------- sessions, memory

    async def memory_state(self, session_id: str) -> MemoryState:
        """What the next prompt of ``session_id`` will carry; raises for unknown sessions.

        The budget is measured on the base session once one exists; before that it
        is estimated (see :meth:`estimated_budget`), so the page can show a meter
        right away without creating a session, which could start a model download.
        """
        state = await self._state(session_id, create=False)
        base = self._bases.get(Purpose.STEP)
        if base is not None:
            budget = self.accountant.budget(state, base.context_window, base.context_usage)
        else:
            budget = self.estimated_budget(state)
        return MemoryState(session_id=session_id, title=state.title, summary=state.summary,
                           facts=list(state.facts), recent_turns=list(state.recent_turns),
                           budget=budget, compactions=state.compactions,
                           failed_compactions=state.failed_compactions,
                           unsaved_turns=len(self._unsaved.get(session_id, [])),
                           detached=session_id in self._detached,
                           compacting=self.compactor.running(session_id),
                           degraded=state.degraded,
                           prefix=(self.prefix.current or self.prefix.estimate(
                               self._known_window())).to_dict(),
                           consecutive_failures=state.consecutive_failures,
                           budget_estimated=base is None)

    def estimated_budget(self, state: SessionState) -> Budget:
        """The budget as it would be, computed without any model session.

        The window is the model's ``context_window`` if it has one as a plain
        attribute, else :data:`DEFAULT_CONTEXT_WINDOW`; the prefix and policy are
        planned for it as a session would be, with the agent's token counter.
        """
        plan = self.prefix.estimate(self._known_window())
        accountant = MemoryAccountant(plan.policy, self.accountant.counter)
        return accountant.budget(state, plan.window, plan.tokens)

    async def transcript(self, session_id: str) -> list[Turn]:
        """Every raw turn of the session, including any not yet saved."""
        await self._state(session_id, create=False)
        archived = [] if session_id in self._detached else await self.store.read_archive(session_id)
        known = {t.id for t in archived}
        return archived + [t for t in self._unsaved.get(session_id, []) if t.id not in known]

    async def compressions(self, session_id: str) -> list[CompressionRecord]:
        """The session's compression log (empty for a session that runs detached from
        storage: its compactions are never written)."""
        await self._state(session_id, create=False)
        return [] if session_id in self._detached else await self.store.compressions(session_id)

    async def rename_session(self, session_id: str, title: str) -> None:
        async with self._lock(self._state_locks, session_id):
            state = (await self._state(session_id, create=False)).copy()
            state.title = " ".join(title.split())[:80]
            await self.store.save(state)
            self._states[session_id] = state

    async def delete_session(self, session_id: str) -> bool:
        """Delete a session; a compaction of it still running is stopped first."""
        await self.compactor.cancel(session_id)
        async with self._lock(self._state_locks, session_id):
            self._states.pop(session_id, None)
            self._unsaved.pop(session_id, None)
            self._detached.discard(session_id)
            return await self.store.delete_session(session_id)

    # ------------------------------------------------------- export, import

    async def export_bundle(self, session_id: str) -> SessionBundle:
        """A consistent snapshot of a session: state, every raw turn, compression log.

        Turns not saved yet are included, so a session whose storage failed can
        still be exported. Raises :class:`UnknownSessionError` for unknown sessions.
        """
        async with self._lock(self._state_locks, session_id):
            state = (await self._state(session_id, create=False)).copy()
            turns = await self.transcript(session_id)
            records = await self.compressions(session_id)
        return SessionBundle(state, turns, records)

    async def export_session(self, session_id: str) -> str:
        """The whole session as ``py-agent-session/1`` JSON Lines (see :mod:`py_agent.transfer`)."""
        return (await self.export_bundle(session_id)).to_jsonl()

    async def import_session(self, text: str, session_id: str | None = None) -> str:
        """Import an exported session; returns its id here, which is never an existing one.

        Raises :class:`~py_agent.transfer.SessionImportError` for a file that cannot
        be read, and the store's error if writing fails (nothing is left behind then).
        """
        return await self.import_bundle(parse_session(text), session_id)

    async def import_bundle(self, bundle: SessionBundle, session_id: str | None = None) -> str:
        """Write ``bundle`` as a new session named ``session_id`` (default: its own id).

        A taken id gets a suffix (``id-2``, ``id-3``, ...). Only the store API is
        used: the compression log first (invisible without a state), then state and
        archive in one ``commit_turn``, so ``list_sessions`` shows the session only
        once it is complete. If a write fails, what was written is deleted again.
        """
        if session_id is not None and (not isinstance(session_id, str) or not session_id.strip()):
            raise ValueError("session_id must be a non-empty string")
        async with self._import_lock:
            for candidate in id_candidates(session_id or bundle.session_id):
                if not await self._session_taken(candidate):
                    break
            bundle = bundle.with_session_id(candidate)
            try:
                for record in bundle.compressions:
                    await self.store.commit_compaction(None, record)
                await self.store.commit_turn(bundle.state, list(bundle.turns))
            except Exception:
                try:
                    await self.store.delete_session(candidate)
                except Exception:
                    log.exception("could not remove the half-imported session %s", candidate)
                raise
        return candidate

    async def _session_taken(self, session_id: str) -> bool:
        """True if the id has a state, here or stored, or leftover archive or log entries."""
        if session_id in self._states or await self.store.load(session_id) is not None:
            return True
        return bool(await self.store.read_archive(session_id)
                    or await self.store.compressions(session_id))

    async def close(self, timeout: float | None = None) -> None:
        """Let background compactions finish (at most ``timeout`` seconds, then they are
        stopped: the raw turns are archived, nothing is lost), then free the base sessions."""
        if not await self.wait_idle(timeout=timeout):
            await self.compactor.cancel()
        for session in self._bases.values():
            try:
                await asyncio.wait_for(session.destroy(), DESTROY_TIMEOUT_S)
            except Exception:
                log.warning("could not destroy a base session")
        self._bases.clear()


def _previous_turn(state: SessionState) -> PreviousTurn | None:
    """The last raw turn as a weaker second query, so a follow-up finds its tools."""
    if not state.recent_turns:
        return None
    last = state.recent_turns[-1]
    tools = tuple(dict.fromkeys(s.tool for s in last.steps
                                if s.tool and s.tool != NONE_TOOL and not s.corrective))
    return PreviousTurn(last.user, tools)


def _title_from(message: str) -> str:
    text = " ".join(message.split())
    return text if len(text) <= 60 else text[:57].rstrip() + "…"


def _model_error_text(exc: Exception) -> str:
    if isinstance(exc, QuotaExceededError):
        return ("That is too long for the on-device model's context window. "
                "Please shorten the message or split it up.")
    name = type(exc).__name__
    if name == "ModelUnavailableError":
        return ("The on-device model is not available right now, so I can't answer. "
                "Your message is saved; try again once the model is ready.")
    if name == "StepTimeoutError":
        return (f"The model stopped answering ({exc}), so I gave up on this message. "
                "Your message is saved; please try again.")
    if name == "ModelNetworkError":
        return "The model could not be reached (it may still be downloading). Please try again."
    return f"Something went wrong while asking the model: {exc}"
