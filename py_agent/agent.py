"""The Agent: a thin facade that builds the parts and offers the public methods.

The work is done below it, each layer importing only those under it:

- the turn (:mod:`py_agent.turn.runner`): open, retrieve tools, make room, loop,
  save, schedule memory upkeep;
- the memory engine (:mod:`py_agent.memory.engine`): background passes that keep
  each session's summary and key facts, and the live memory sessions; beside it the
  archive recall index (:mod:`py_agent.recall.archive`), fed by the session table; the
  user's control of the profile shared by the sessions (:mod:`py_agent.memory.profile_control`);
- the session table (:mod:`py_agent.sessions`) and the base model sessions
  (:mod:`py_agent.bases`);
- the store, the model and the plain data (state, results, events).

Events go up only through the ``emit`` callable each part is handed: the agent's
:attr:`Agent.on_event`, plus the handler of the turn that caused them.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import datetime
from typing import AsyncIterator, Awaitable, Callable, Iterable

from .attachments import Attachment, Scaler, check_count, pillow_scaler
from .bases import BaseSessions
from .boundary import clean_text
from .budget import Budget, MemoryAccountant, MemoryPolicy
from .events import AgentEvent, EventHandler, deliver
from .memory.engine import MemoryEngine
from .memory.live import DEFAULT_MAX_LIVE, MemorySessions
from .memory.profile_control import ProfileControl
from .memory.steps import base_prompts
from .memory_report import estimated_budget, memory_report
from .model import LanguageModel, MediaSupport
from .prefix import PrefixPlan, PrefixPlanner
from .profile import ProfileFact
from .prompting import SYSTEM_INSTRUCTION
from .embedding import Embedder, EmbedderSlot
from .embedding.use_m3 import default_loader
from .recall import Hit
from .recall.archive import ArchiveRecall, local_now
from .results import CompactionReport, MemoryState, RunResult
from .retrieval import ToolRetriever
from .sessions import SessionTable
from .state import CompressionRecord, SessionInfo, SessionState, Turn
from .store import InMemoryStore, Store, UnknownSessionError
from .tokens import TokenCounter
from .tools import StaticSource, Tool, Toolbox
from .tools.origin import BUILTIN
from .transfer import SessionBundle, parse_session
from .turn.compact_tool import compact_tool
from .turn.context import TurnContext
from .turn.approval import Approver
from .turn.policies import StepPolicy, ToolPolicy
from .turn.recall_tool import recall_tool
from .turn.runner import TurnRunner, TurnSettings
from .turn.tool_runner import SyncRunner


class Agent:
    """An agent over a Prompt-API-like model, with tools and per-session memory.

    Args:
        model: a :class:`~py_agent.model.LanguageModel` (the browser bridge, or
            :class:`~py_agent.testing.FunctionModel` in tests).
        store: where sessions persist; an :class:`InMemoryStore` by default.
        tools: a :class:`~py_agent.tools.Toolbox` (tools from several sources that change
            on their own: tool servers, a page's, tool modules), or the app's own tools;
            the retriever offers the top ``top_k`` per message. The agent adds its
            built-in tools to the toolbox as source ``builtin``.
        memory: thresholds for compaction; see :class:`MemoryPolicy`.
        tool_policy: timeout, retries and output cap for tool calls.
        step_policy: the deadline of each model call in a turn; see :class:`StepPolicy`.
        sync_tool_runner: where sync tools run (``runner(tool, kwargs, timeout)``): by
            default a thread (CPython) or inline (Pyodide, where nothing can stop them);
            the page passes its tool worker (:mod:`py_agent.turn.remote_tools`).
        max_steps: iteration cap of one turn.
        on_event: called with every :class:`AgentEvent`, including background ones.
        compact_tool_enabled: offer the built-in ``compact`` tool when it matches.
        memory_sessions: how many chats keep a model session that has already read
            their memory, so a turn prompts only what is new (0: every turn's prompt
            carries the whole memory); see :mod:`py_agent.memory.live`.
        recall: keep an index of every archived turn: :meth:`recall`, automatic recall
            into each turn's first prompt (sized by the memory policy's ``recall_*``),
            and the built-in ``recall`` tool; see :mod:`py_agent.recall.archive`.
        clock: the user's local time, an aware datetime (for "last week" in recall).
        approve: asked before each call of a consequential tool (``Tool.confirm``):
            ``approve(request)`` gets an :class:`~py_agent.turn.approval.ApprovalRequest`
            (the tool's name, its arguments, its server, the session) and returns or
            awaits ``True`` (allow once), ``"chat"`` (allow this tool for the rest of the
            chat) or ``False`` (deny). None: such calls are refused, with an observation
            that says why (see :mod:`py_agent.turn.approval`).
        image_scaler: scales down an attached picture too large for the model's window
            (:mod:`py_agent.attachments.scaling`); by default Pillow's where it is
            installed, else such a picture is refused, saying so.
        embedder: sentence vectors for tool choice and recall (docs/retrieval.md): an
            :class:`~py_agent.embedding.Embedder`, a coroutine function that loads one
            (in the background: nothing waits for it), an
            :class:`~py_agent.embedding.EmbedderSlot`, ``None`` (lexical signals only), or
            ``True``: USE multilingual v3 where the ``embed`` extra is installed.
    """

    def __init__(self, model: LanguageModel, store: Store | None = None,
                 tools: Toolbox | Iterable[Tool] = (), memory: MemoryPolicy | None = None, *,
                 tool_policy: ToolPolicy | None = None, max_steps: int = 7, top_k: int = 3,
                 on_event: EventHandler | None = None, compact_tool_enabled: bool = True,
                 system_instruction: str = SYSTEM_INSTRUCTION,
                 step_policy: StepPolicy | None = None,
                 sync_tool_runner: SyncRunner | None = None,
                 memory_sessions: int = DEFAULT_MAX_LIVE, recall: bool = True,
                 clock: Callable[[], datetime] = local_now,
                 approve: Approver | None = None,
                 image_scaler: Scaler | None = None,
                 embedder: Embedder | EmbedderSlot | Callable[[], Awaitable[Embedder]] | bool | None = True) -> None:
        if max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        self.store: Store = store if store is not None else InMemoryStore()
        # The policy asked for; the one in use (self.policy) may be scaled to the window.
        self.requested_policy = memory or MemoryPolicy()
        self.on_event = on_event
        # A toolbox handed in is the app's (the page's models take turns with one); one
        # made here from the app's tools is the agent's, closed with it.
        self._own_toolbox = not isinstance(tools, Toolbox)
        self.toolbox = tools if isinstance(tools, Toolbox) else Toolbox(tools)
        builtins = [*([compact_tool()] if compact_tool_enabled else []),
                    *([recall_tool()] if recall else [])]
        self.toolbox.add(StaticSource("builtin", builtins, BUILTIN))
        self.system_instruction = system_instruction
        self.accountant = MemoryAccountant(self.requested_policy, TokenCounter())
        self.model_calls: Counter[str] = Counter()
        self.sessions = SessionTable(self.store)
        if embedder is True:
            embedder = default_loader()
        # A slot handed in is the app's (the page's agents share one); one made here is
        # the agent's, closed with it.
        self._own_embedder = not isinstance(embedder, EmbedderSlot)
        self.embedder = (embedder if isinstance(embedder, EmbedderSlot)
                         else EmbedderSlot(embedder or None))
        self.archive_recall = (ArchiveRecall(self.store, self.sessions, clock=clock,
                                             embedder=self.embedder) if recall else None)
        planner = PrefixPlanner(self.requested_policy, self.accountant.counter,
                                system_instruction, lambda: self.toolbox.snapshot().tools, top_k)
        self.bases = BaseSessions(model, planner, base_prompts(), self._emit)
        self.memory = MemoryEngine(self.sessions, self.bases, self.accountant, self._emit,
                                   calls=self.model_calls, memory_sessions=memory_sessions)
        self.profile_control = ProfileControl(self.sessions, self.accountant, self._emit)
        self.settings = TurnSettings(tool_policy or ToolPolicy(), step_policy or StepPolicy(),
                                     max_steps, sync_tool_runner, approver=approve,
                                     image_scaler=image_scaler or pillow_scaler())
        self.turns = TurnRunner(self.sessions, self.bases, self.memory, self.accountant,
                                self.toolbox, self.settings, self._emit, self.model_calls,
                                recall=self.archive_recall, top_k=top_k,
                                embedder=self.embedder)

    async def _emit(self, event: AgentEvent) -> None:
        await deliver([self.on_event], event)

    # ------------------------------------------------------------ the parts' state

    @property
    def tools(self) -> list[Tool]:
        """The agent's tools now, names resolved (see :class:`~py_agent.tools.Toolbox`);
        a running turn keeps the tools it was offered."""
        return self.toolbox.tools

    @property
    def retriever(self) -> ToolRetriever:
        """The tool retriever over the tools now (rebuilt only when they change)."""
        return self.turns.retriever()

    @property
    def model(self) -> LanguageModel:
        return self.bases.model

    @model.setter
    def model(self, model: LanguageModel) -> None:
        """Answer with another model from the next call on (new base sessions)."""
        self.bases.use(model)

    @property
    def policy(self) -> MemoryPolicy:
        """The memory policy in use: the requested one, or scaled down for a small window."""
        return self.accountant.policy

    @property
    def tool_policy(self) -> ToolPolicy:
        return self.settings.tool_policy

    @property
    def step_policy(self) -> StepPolicy:
        return self.settings.step_policy

    @property
    def max_steps(self) -> int:
        return self.settings.max_steps

    @property
    def sync_tool_runner(self) -> SyncRunner | None:
        return self.settings.sync_tool_runner

    @property
    def memory_sessions(self) -> MemorySessions:
        """The live memory sessions of the chats (see :mod:`py_agent.memory.live`)."""
        return self.memory.live

    @property
    def prefix_plan(self) -> PrefixPlan | None:
        """The prefix in use, planned for the model's window when the first turn ran."""
        return self.bases.plan

    # -------------------------------------------------------------------- turns

    async def run(self, prompt: str, session_id: str = "default", *,
                  on_event: EventHandler | None = None,
                  abort: asyncio.Event | None = None,
                  approve: Approver | None = None,
                  attachments: Iterable[Attachment] = ()) -> RunResult:
        """Answer ``prompt`` in ``session_id``; never raises for model, tool or storage trouble.

        Whatever happens, the turn is kept in the transcript with the user's message:
        answered, "incomplete" (the step cap), "error" (with a message saying why),
        or "stopped" when ``abort`` is set (set it to stop) or the call is cancelled.
        ``approve`` asks the user in this turn instead of the agent's ``approve``.
        ``attachments`` are images and sounds for this message
        (:class:`~py_agent.attachments.Attachment`): read and checked first (an
        :class:`~py_agent.attachments.AttachmentError`, before anything is archived, says
        what is wrong with one), sent with this turn only, kept in the archive.
        """
        if not isinstance(prompt, str) or not prompt.strip():
            raise ValueError("prompt must be a non-empty string")
        media = list(attachments)
        check_count(media)
        loaded = tuple(a.loaded() for a in media)
        turn = TurnContext(session_id, clean_text(prompt).strip(), abort, approver=approve,
                           attachments=loaded)
        return await self.turns.run(turn, on_event=on_event)

    async def call_tool(self, name: str, tool_input: object = None, *,
                        session_id: str = "default",
                        on_event: EventHandler | None = None) -> str:
        """Run tool ``name`` with ``tool_input`` outside a turn (for another agent, such
        as the browser's through WebMCP), guarded as in a turn: a consequential tool asks
        the approver first, as a question of chat ``session_id``. The observation text;
        ValueError for a tool the agent does not have."""
        return await self.turns.call_tool(name, tool_input, session_id, on_event=on_event)

    async def stream(self, prompt: str, session_id: str = "default", *,
                     abort: asyncio.Event | None = None,
                     attachments: Iterable[Attachment] = ()
                     ) -> AsyncIterator[AgentEvent | RunResult]:
        """Yield each event of the turn as it happens, then the :class:`RunResult`."""
        queue: asyncio.Queue = asyncio.Queue()
        task = asyncio.ensure_future(self.run(prompt, session_id, on_event=queue.put_nowait,
                                              abort=abort, attachments=attachments))
        task.add_done_callback(lambda _: queue.put_nowait(None))
        while (item := await queue.get()) is not None:
            yield item
        yield task.result()

    # ------------------------------------------------------------------- memory

    async def compact(self, session_id: str, focus: str | None = None) -> CompactionReport:
        """Compact now: every turn but the newest ``min_recent_turns`` goes into memory."""
        await self.sessions.open(session_id, create=False)
        await self.wait_idle(session_id)
        async with self.sessions.turn_lock(session_id):
            return await self.memory.compact(session_id, "manual", focus, everything=True)

    async def wait_idle(self, session_id: str | None = None, timeout: float | None = None) -> bool:
        """Wait for background compactions (of one session, or all) to finish, at most
        ``timeout`` seconds; True if none is running any more. Without a timeout the
        wait is still bounded: every model call of a compaction has its own
        (``MemoryPolicy.summary_timeout_s``, ``facts_timeout_s``)."""
        return await self.memory.wait_idle(session_id, timeout)

    async def memory_state(self, session_id: str) -> MemoryState:
        """What the next prompt of ``session_id`` will carry; raises for unknown sessions
        (see :func:`py_agent.memory_report.memory_report`)."""
        return await memory_report(session_id, self.sessions, self.bases, self.accountant,
                                   self.memory, self.archive_recall)

    def estimated_budget(self, state: SessionState) -> Budget:
        """The budget as it would be, computed without any model session."""
        return estimated_budget(state, self.bases, self.accountant, self.memory)

    # ------------------------------------------------------------- user profile
    # Lasting facts shared by every session that is not private; see py_agent.profile.

    async def profile(self) -> list[ProfileFact]:
        """The user profile: every fact, with the session and turn it came from and when."""
        return await self.profile_control.facts()

    async def edit_profile_fact(self, fact_id: str, text: str) -> ProfileFact:
        """Change a profile fact's words (the session it came from follows); raises
        :class:`~py_agent.profile.UnknownProfileFactError` or ValueError."""
        return await self.profile_control.edit(fact_id, text)

    async def confirm_profile_fact(self, fact_id: str) -> ProfileFact:
        """Confirm a profile fact taken from untrusted text (``ProfileFact.unconfirmed``):
        from now on every chat that is not private shows it. Returns the confirmed fact;
        raises :class:`~py_agent.profile.UnknownProfileFactError`."""
        return await self.profile_control.confirm(fact_id)

    async def forget_profile_fact(self, fact_id: str) -> ProfileFact:
        """Forget a profile fact: it leaves the profile and every prompt, the session it
        came from included, and is not taken again from the turns that said it. Returns
        the forgotten fact; raises :class:`~py_agent.profile.UnknownProfileFactError`."""
        return await self.profile_control.forget(fact_id)

    async def set_private(self, session_id: str, private: bool = True) -> None:
        """Make a session private (it neither reads nor adds to the profile, and other
        sessions' recall skips it; what it gave the profile is taken out) or not."""
        await self.profile_control.set_private(session_id, private)

    # ------------------------------------------------------------------- recall

    async def recall(self, query: str, *, session_id: str | None = None, k: int = 5) -> list[Hit]:
        """The ``k`` archived turns that best answer ``query``, best first.

        ``session_id=None`` searches every session the user has not made private
        (``SessionInfo.private``); a session id searches only that session (private or
        not; :class:`UnknownSessionError` if there is none). Each :class:`Hit` has the
        ``session_id``, the ``turn_id`` as in the transcript, a ``text`` of the turn, its
        ``score`` and ``time`` (epoch ms), and ``why`` it was found. Time phrases ("last
        week") are read in the agent's ``clock``'s time zone.
        """
        if not isinstance(query, str) or not query.strip():
            raise ValueError("query must be a non-empty string")
        if self.archive_recall is None:
            raise RuntimeError("this agent was made with recall=False")
        sessions = None
        if session_id is not None:
            if self.sessions.state(session_id) is None and \
                    await self.store.load(session_id) is None:
                raise UnknownSessionError(session_id)
            sessions = [session_id]
        return await self.archive_recall.search(query, sessions=sessions, k=k)

    async def save_recall(self) -> int:
        """Save the recall index's blobs that lack turns now (the page asks when it is
        hidden; :meth:`close` does it too); how many sessions were saved."""
        if self.archive_recall is None:
            return 0
        return await self.archive_recall.flush()

    async def list_sessions(self) -> list[SessionInfo]:
        """Every stored session, most recently updated first (the recall index learns
        from the list what other tabs or processes changed)."""
        infos = await self.store.list_sessions()
        if self.archive_recall is not None:
            self.archive_recall.sync(infos)
        return infos

    # ----------------------------------------------------------------- sessions

    async def transcript(self, session_id: str) -> list[Turn]:
        """Every raw turn of the session, including any not yet saved."""
        return await self.sessions.transcript(session_id)

    async def media_support(self) -> MediaSupport:
        """What the model in use takes besides text: images, sounds, and why not (ask
        before the user tries; the page's attach and record buttons do)."""
        return await self.bases.media_support()

    async def attachment(self, session_id: str, attachment_id: str) -> Attachment | None:
        """An attachment the archive keeps (its bytes, type, name and pixels), or None if
        it was not kept (see the turn's record) or the store keeps none."""
        return await self.sessions.attachment(session_id, attachment_id)

    async def compressions(self, session_id: str) -> list[CompressionRecord]:
        """The session's compression log (empty for a session detached from storage)."""
        return await self.sessions.compressions(session_id)

    async def rename_session(self, session_id: str, title: str) -> None:
        await self.sessions.rename(session_id, title)

    async def delete_session(self, session_id: str) -> bool:
        """Delete a session, with the facts it gave the user profile; its background
        memory work is stopped first, at once."""
        await self.memory.forget(session_id)
        profile = self.sessions.profiles.current.version
        existed = await self.sessions.delete(session_id)
        if self.sessions.profiles.current.version != profile:
            await self._emit(AgentEvent("profile_updated", session_id, {
                "version": self.sessions.profiles.current.version, "by": "user",
                "facts": len(self.sessions.profiles.current.facts), "action": "deleted"}))
        return existed

    async def export_bundle(self, session_id: str) -> SessionBundle:
        """A consistent snapshot of a session: state, every raw turn, compression log
        (turns not saved yet included). Raises :class:`UnknownSessionError` for unknown
        sessions."""
        return await self.sessions.export(session_id)

    async def export_session(self, session_id: str) -> str:
        """The whole session as ``py-agent-session/2`` JSON Lines (see :mod:`py_agent.transfer`)."""
        return (await self.export_bundle(session_id)).to_jsonl()

    async def import_session(self, text: str, session_id: str | None = None) -> str:
        """Import an exported session; returns its id here, which is never an existing one.

        Raises :class:`~py_agent.transfer.SessionImportError` for a file that cannot
        be read, and the store's error if writing fails (nothing is left behind then).
        """
        return await self.import_bundle(parse_session(text), session_id)

    async def import_bundle(self, bundle: SessionBundle, session_id: str | None = None) -> str:
        """Write ``bundle`` as a new session named ``session_id`` (default: its own id; a
        taken id gets a suffix, ``id-2``...); see :meth:`SessionTable.import_bundle`."""
        return await self.sessions.import_bundle(bundle, session_id)

    async def close(self, timeout: float | None = None) -> None:
        """Stop background memory work and free every model session.

        Passes still running are stopped at once (after ``timeout`` seconds if given):
        every raw turn is archived before a pass starts and a stopped pass commits
        nothing, so nothing is lost and the stored sessions stay consistent. To let a
        compaction finish first, call :meth:`wait_idle` (or give a ``timeout``).
        """
        if timeout:
            await self.wait_idle(timeout=timeout)
        await self.memory.close()
        await self.turns.tool_choice.close()
        if self.archive_recall is not None:
            await self.archive_recall.close()  # and saves the recall blobs that lag
        if self._own_embedder:
            await self.embedder.close()
        await self.bases.close()
        if self._own_toolbox:
            await self.toolbox.close()
