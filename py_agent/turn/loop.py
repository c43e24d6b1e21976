"""The ReAct loop of one turn, with every guard the small on-device model needs.

One clone of the prefilled base session per turn: the first prompt carries
memory, tools and the message; each later prompt only the new observation.
Every unusable reply becomes a corrective observation, never an exception; a model
that keeps giving the same step (a call it made already, an unusable reply it wrote
before) is told once, and ends the turn the second time.
Each step asks for the richest response constraint the model accepts and steps
down when one is refused (:mod:`py_agent.constraints`); the level is in the trace.
Every model call has a deadline (:class:`StepPolicy`) besides the stop button;
what the model raises arrives here as a :class:`~py_agent.model.ModelError`.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, TypeVar

from ..boundary import loads_bounded, untrusted_text
from ..constraints import ConstraintLevel, LevelChange, ModelConstraints
from ..events import AgentEvent
from ..model import (MediaSupport, ModelCallError, ModelError, ModelSession, ModelTimeoutError,
                     Prompt, Purpose, QuotaExceededError, as_model_error, media_kinds,
                     with_media)
from ..parsing import StepParseError, parse_step
from ..prompting import (NONE_TOOL, corrective_prompt, format_tool_input, observation_prompt,
                         shorten, step_constraint, untrusted_block)
from ..results import RunResult, StepTrace
from ..tools import MemoryAccess, ModelAccess, RunContext, Trust, media_note
from ..tools.run_context import ToolEmit
from ..waiting import CancelledInside, Crashed, DeadlineExceeded, TurnAborted, bounded
from .context import TurnContext
from .policies import StepPolicy, ToolPolicy
from .approval import ApprovalGate
from .tool_runner import OutcomeKind, SyncRunner, run_tool
from .tool_services import TurnMemory

T = TypeVar("T")

# How many times a turn may be stuck (the same call again, or an unusable reply it wrote
# before) before it ends: at temperature 0 a model asked again writes the same reply, so
# every further step costs a whole reply and gains nothing.
STUCK_LIMIT = 2


async def model_call(awaitable: Awaitable[T], policy: StepPolicy, abort: asyncio.Event | None,
                     what: str = "answer") -> T:
    """A model call under the step deadline and the stop button; every failure but a
    stop (:class:`TurnAborted`) is a :class:`~py_agent.model.ModelError`."""
    try:
        return await bounded(awaitable, timeout=policy.timeout_s, abort=abort)
    except (TurnAborted, ModelError):
        raise
    except DeadlineExceeded:
        raise ModelTimeoutError(f"the model did not {what} within {policy.timeout_s:g} s") \
            from None
    except CancelledInside:
        raise ModelCallError("the model call was cancelled by the model itself") from None
    except Crashed as exc:
        raise as_model_error(exc.__cause__ or exc) from None
    except Exception as exc:
        raise as_model_error(exc) from None


async def abortable(awaitable: Awaitable[T], abort: asyncio.Event | None) -> T:
    """Await ``awaitable`` unless ``abort`` is set first; then cancel it and raise."""
    return await bounded(awaitable, abort=abort)


def action_key(tool: str, tool_input: Any) -> str:
    """Identity of an action, so a repeat is recognised whatever the key order."""
    if isinstance(tool_input, str):
        text = tool_input.strip()
        try:
            tool_input = loads_bounded(text) if text.startswith("{") else " ".join(text.split())
        except ValueError:
            tool_input = " ".join(text.split())
    return tool + ":" + json.dumps(tool_input, sort_keys=True, ensure_ascii=False)


@dataclass
class TurnLoop:
    """What one turn's loop needs besides the turn's own context (the agent's policies,
    how to open a model session and make the first prompt), and what it reports back."""

    turn: TurnContext
    # The turn's first prompt (text, or text and the attachments as content parts).
    first_prompt: Callable[[list[StepTrace], bool], Prompt]
    new_session: Callable[[], Awaitable[ModelSession]]
    emit: Callable[[AgentEvent], Awaitable[None]]
    tool_policy: ToolPolicy
    max_steps: int
    # Asks the user before a consequential call (py_agent.turn.approval), once per turn.
    gate: ApprovalGate
    step_policy: StepPolicy = field(default_factory=StepPolicy)
    sync_tool_runner: SyncRunner | None = None
    # The response constraints the model accepted so far (py_agent.constraints).
    constraints: ModelConstraints = field(default_factory=ModelConstraints)
    # What a tool may use of the agent, through each call's RunContext.
    model: ModelAccess | None = None
    memory: TurnMemory = field(default_factory=lambda: TurnMemory(None))
    # The steps so far, kept here so that a stopped or failed turn still has them.
    steps: list[StepTrace] = field(default_factory=list)
    # The untrusted text the model reads besides this turn's results, asked after each
    # first prompt is made (the memory it shows, or the memory session's, and recalled
    # turns): each reason says which text and where it sits.
    read_untrusted: Callable[[], list[str]] = lambda: []
    # Keep the model session of an answered turn (in ``kept``) instead of destroying it:
    # the runner asks it about the turn's attachments, then destroys it.
    keep_session: bool = False
    kept: ModelSession | None = None
    # Pictures or sounds a tool returns go to a model that takes them: what it takes (asked
    # only then), the kinds the current session was made for, and how to open one that
    # takes more (the turn starts over on it, its steps so far condensed).
    media_support: Callable[[], Awaitable[MediaSupport]] | None = None
    session_kinds: frozenset[str] = frozenset()
    media_session: Callable[[frozenset[str]], Awaitable[ModelSession]] | None = None

    def context(self, tool_name: str, emit: ToolEmit) -> RunContext:
        """The context of one tool call of this turn."""
        return call_context(self.turn, tool_name, emit, self.model, self.memory)


def _taint_from_memory(ctx: TurnLoop) -> None:
    """The untrusted text the turn's session and first prompt hold (raw turns, the
    summary's marked part, marked facts, recalled turns): the gate asks while it is there."""
    for reason in ctx.read_untrusted():
        ctx.gate.taint(reason)


def call_context(turn: TurnContext, tool_name: str, emit: ToolEmit,
                 model: ModelAccess | None, memory: MemoryAccess | None) -> RunContext:
    """The :class:`~py_agent.tools.RunContext` of one call of ``tool_name`` in ``turn``."""
    return RunContext(session_id=turn.session_id, message=turn.message, turn_id=turn.turn_id,
                      tool_name=tool_name, abort=turn.abort, model=model, memory=memory,
                      emit=emit)


async def run_turn(ctx: TurnLoop) -> RunResult:
    """Run the loop until an answer, the step cap, an abort or an unrecoverable error."""
    turn = ctx.turn
    by_name = {s.tool.name: s.tool for s in turn.offered}
    result = RunResult(answer="", steps=ctx.steps, session_id=turn.session_id,
                       turn_id=turn.turn_id,
                       tools_offered=[(s.tool.name, s.score) for s in turn.offered])
    seen: dict[str, str] = {}
    recovered = False
    # The model is stuck when it makes a call it already made or writes an unusable reply
    # it wrote before; told once, it may recover; the second time the turn ends.
    unusable: set[str] = set()
    stuck = 0

    async def emit(event_type: str, /, **data: Any) -> None:
        await ctx.emit(AgentEvent(event_type, turn.session_id, data))  # type: ignore[arg-type]

    session = await model_call(ctx.new_session(), ctx.step_policy, turn.abort, "start a step")
    try:
        prompt = ctx.first_prompt(result.steps, False)
        _taint_from_memory(ctx)
        while len(result.steps) < ctx.max_steps:
            index = len(result.steps) + 1
            await emit("step_started", index=index,
                       constraint=ctx.constraints.level(Purpose.STEP).value)
            started = time.perf_counter()
            try:
                raw, level = await _prompt_step(session, prompt, by_name, index, ctx)
            except QuotaExceededError:
                if recovered:
                    raise
                # The turn's own work outgrew the window: start a fresh clone with a
                # tighter memory and the steps so far condensed, once.
                recovered = True
                await session.destroy()
                session = await model_call(ctx.new_session(), ctx.step_policy, turn.abort,
                                           "start a step")
                prompt = ctx.first_prompt(result.steps, True)
                _taint_from_memory(ctx)
                continue
            model_ms = (time.perf_counter() - started) * 1000
            step = StepTrace(index=index, kind="corrective", model_ms=model_ms, raw=raw,
                             constraint=level.value)
            result.steps.append(step)
            prompt = await _handle_reply(ctx, step, raw, by_name, seen, emit)
            wanted = media_kinds(prompt) - ctx.session_kinds
            if wanted and ctx.media_session is not None:
                # A tool returned a picture or sound this session was not made for: go on
                # in one that takes it, from the first prompt and the steps so far.
                await session.destroy()
                session = await model_call(ctx.media_session(ctx.session_kinds | wanted),
                                           ctx.step_policy, turn.abort, "start a step")
                ctx.session_kinds = ctx.session_kinds | wanted
                prompt = joined(ctx.first_prompt(result.steps, True), prompt)
            if step.kind == "answer":
                result.answer = step.observation
                step.observation = ""
                break
            if step.kind == "repeat" or (step.kind == "corrective" and raw in unusable):
                stuck += 1
            if step.kind == "corrective":
                unusable.add(raw)
            if stuck >= STUCK_LIMIT:
                result.status = "incomplete"
                result.answer = _stuck(result.steps)
                break
        else:
            result.status = "incomplete"
            result.answer = _gave_up(result.steps, ctx.max_steps)
    except BaseException:
        await session.destroy()
        raise
    if ctx.keep_session and result.status == "answered":
        ctx.kept = session
    else:
        await session.destroy()
    return result


async def _prompt_step(session: ModelSession, prompt: Prompt, by_name: dict, index: int,
                       ctx: TurnLoop) -> tuple[str, ConstraintLevel]:
    """One step call under the richest response constraint the model takes (a refused
    one is asked again a level down: :mod:`py_agent.constraints`); each call is retried
    after a retryable model error (not after a timeout). The reply and its level."""
    policy = ctx.step_policy

    async def call(constraint: dict[str, Any] | None) -> str:
        for attempt in range(policy.retries + 1):
            try:
                return await model_call(session.prompt(prompt, response_constraint=constraint,
                                                       purpose=Purpose.STEP), policy,
                                        ctx.turn.abort)
            except ModelError as exc:
                if not exc.retryable or attempt == policy.retries:
                    raise
            await bounded(asyncio.sleep(policy.retry_delay_s), abort=ctx.turn.abort)
        raise AssertionError("unreachable")  # pragma: no cover

    async def announce(change: LevelChange) -> None:
        await ctx.emit(AgentEvent("constraint_level", ctx.turn.session_id,
                                  {**change.to_dict(), "index": index}))

    return await ctx.constraints.ask(Purpose.STEP, lambda level: step_constraint(level, by_name),
                                     call, announce)


def _stuck(steps: list[StepTrace]) -> str:
    """The answer of a turn that ended because the model kept giving the same step."""
    last = next((s.observation for s in reversed(steps) if s.kind == "tool" and s.ok), "")
    if last:
        return ("I stopped because I kept repeating the same step. The last result I got "
                f"was: {shorten(last, 300)}")
    problem = steps[-1].observation.removeprefix("Your last reply was not a usable step: ")
    return ("I stopped: the model's replies could not be used and it kept giving the same "
            f"one ({shorten(problem.rstrip('.'), 200)}). Please try again or rephrase.")


def _gave_up(steps: list[StepTrace], max_steps: int) -> str:
    """The answer of a turn that hit the step cap: what it got, or why nothing worked."""
    last = next((s.observation for s in reversed(steps) if s.kind == "tool" and s.ok), "")
    if last:
        return (f"I could not finish this within {max_steps} steps. The last result I got "
                f"was: {shorten(last, 300)}")
    if steps and all(s.kind == "corrective" for s in steps):
        problem = steps[-1].observation.removeprefix("Your last reply was not a usable step: ")
        return (f"I could not finish this within {max_steps} steps: the model's replies "
                f"could not be used ({shorten(problem.rstrip('.'), 200)}). Please try again "
                "or rephrase.")
    return (f"I could not finish this within {max_steps} steps. Please rephrase the request "
            "or break it into smaller parts.")


async def _handle_reply(ctx: TurnLoop, step: StepTrace, raw: str, by_name: dict,
                        seen: dict[str, str], emit: Callable[..., Awaitable[None]]) -> str:
    """Act on one reply; fill in ``step``; return the next delta prompt."""
    try:
        parsed = parse_step(raw)
    except StepParseError as exc:
        step.observation = f"Your last reply was not a usable step: {exc}."
        step.ok = False
        await emit("observation", index=step.index, tool="", text=step.observation, ok=False,
                   kind="corrective", duration_ms=0)
        return corrective_prompt(step.observation)

    step.thought, step.tool, step.tool_input = parsed.thought, parsed.tool_name, parsed.tool_input
    if parsed.thought:
        await emit("thought", index=step.index, text=parsed.thought)
    offered = parsed.tool_name in by_name

    if parsed.final_answer and not offered:
        step.kind, step.tool, step.observation = "answer", NONE_TOOL, parsed.final_answer
        return ""
    if parsed.tool_name in ("", NONE_TOOL):
        step.ok = False
        step.observation = ('toolName was "none" but finalAnswer was empty. Put your answer '
                            "for the user in finalAnswer, or choose a tool.")
    elif not offered:
        step.ok = False
        choices = ", ".join([*by_name, NONE_TOOL])
        step.observation = (f"There is no tool named {parsed.tool_name!r} for this request. "
                            f"Choose one of: {choices}.")
    if not step.ok:
        await emit("observation", index=step.index, tool=parsed.tool_name, text=step.observation,
                   ok=False, kind="corrective", duration_ms=0)
        return corrective_prompt(step.observation)

    await emit("action", index=step.index, tool=parsed.tool_name,
               input=format_tool_input(parsed.tool_input))
    key = action_key(parsed.tool_name, parsed.tool_input)
    if key in seen:
        step.kind = "repeat"
        step.observation = (f"You already called {parsed.tool_name} with this input; the result "
                            f"was: {shorten(seen[key], 600)} Use it to answer now, or try "
                            "something different.")
        await emit("observation", index=step.index, tool=parsed.tool_name, text=step.observation,
                   ok=True, kind="repeat", duration_ms=0)
        return observation_prompt(parsed.tool_name, step.observation)

    tool = by_name[parsed.tool_name]
    step.kind = "tool"

    async def tell(kind: str, data: dict[str, Any]) -> None:
        if kind == "approval":
            step.approval = str(data.get("decision", ""))
        await emit(kind, index=step.index, **data)

    asked = ctx.memory.compaction_requests
    read_before = len(ctx.memory.untrusted)
    outcome = await abortable(run_tool(tool, parsed.tool_input, ctx.tool_policy,
                                       ctx.sync_tool_runner, gate=ctx.gate,
                                       context=ctx.context(tool.name, tell), tell=tell),
                              ctx.turn.abort)
    step.observation, step.ok, step.tool_ms = outcome.observation, outcome.ok, outcome.duration_ms
    if ctx.memory.compaction_requests > asked:
        step.kind = "compact"   # the model asked for a compaction after the answer
    shown: list = []
    if outcome.media and outcome.kind is OutcomeKind.OK:
        support = await ctx.media_support() if ctx.media_support is not None else None
        shown = [m for m in outcome.media if support is not None and support.can(m.kind)]
        unseen = [m for m in outcome.media if m not in shown]
        notes = [media_note(shown, seen=True), media_note(unseen, seen=False)]
        step.observation += "".join("\n" + n for n in notes if n)
    trust = tool.origin.trust
    source = f"{tool.name} ({tool.origin.server or tool.origin.kind.value})"
    if trust is Trust.UNTRUSTED and outcome.kind in (OutcomeKind.OK, OutcomeKind.REMOTE_ERROR):
        # A server's or a page's words: data between marks, never instructions; and
        # from now on, every consequential call is asked about, even one the user
        # allowed for the chat, while this text is in what the model reads.
        step.observation = untrusted_block(source, untrusted_text(step.observation))
        step.untrusted = source
    if trust is Trust.PAGE_TEXT and outcome.kind is OutcomeKind.OK:
        # The page's own words (delimited by the page tools): the same.
        step.untrusted = source
    recalled = ctx.memory.untrusted[read_before:]
    if recalled and not step.untrusted:
        # Turns recalled from the archive (other chats' words, results kept there).
        step.untrusted = f"{tool.name} (the archive)"
    if step.untrusted:
        for reason in recalled or [f"text from {source} (this turn, step {step.index})"]:
            ctx.gate.taint(reason)
    seen[key] = step.observation
    await emit("observation", index=step.index, tool=parsed.tool_name, text=step.observation,
               ok=step.ok, kind=step.kind, duration_ms=round(step.tool_ms, 1))
    return observed(observation_prompt(parsed.tool_name, step.observation), shown)


END_OF_DATA = "\u27e6end of data\u27e7"


def observed(text: str, media: list) -> Prompt:
    """An observation with the media a model that sees is shown: the text, the media,
    and, for data between marks, the end mark after them (so the pictures are inside
    the data, never instructions)."""
    if not media:
        return text
    if text.endswith(END_OF_DATA):
        parts = with_media(text[:-len(END_OF_DATA)].rstrip(), list(media))
        assert isinstance(parts, list)
        return [*parts, {"type": "text", "value": " " + END_OF_DATA}]
    return with_media(text, list(media))


def joined(first: Prompt, then: Prompt) -> Prompt:
    """Two prompts sent as one, a blank line between them."""
    head = [{"type": "text", "value": first}] if isinstance(first, str) else list(first)
    tail = [{"type": "text", "value": then}] if isinstance(then, str) else list(then)
    return [*head, {"type": "text", "value": "\n\n"}, *tail]  # type: ignore[list-item]


def condensed_steps(steps: list[StepTrace], observation_chars: int) -> str:
    """The steps so far in a few lines, for a turn restarted after an overflow."""
    lines = []
    for s in steps:
        if s.kind in ("tool", "repeat", "compact"):
            lines.append(f"- {s.tool}({format_tool_input(s.tool_input)}) → "
                         f"{shorten(s.observation, observation_chars)}")
    return ("Steps already taken this turn:\n" + "\n".join(lines)) if lines else ""
