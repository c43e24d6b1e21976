"""A seeded fuzzer for the agent: hostile model output, misbehaving models, tools and
storage, stops mid-turn and two writers on one session, driving a real :class:`Agent`
with :class:`FunctionModel` (and a hand-written model for replies that are not text).

Each case is a short conversation built from one seed. After it, the case is checked:

- escapes: an exception came out of ``Agent.run``;
- hangs: a turn (or the background work after it) passed ``HANG_LIMIT_S``;
- unreadable: a fresh agent on the same store cannot show the memory, the transcript,
  or export the session as UTF-8 JSON Lines that imports again;
- lost: a message sent is missing from the transcript, under its turn id and status,
  or an answered turn is in neither the raw turns nor a compaction;
- duplicates: two turns share an id;
- unindexed: the recall index a fresh agent loads lacks an archived turn.

``tests/unit/test_fuzz.py`` runs a few hundred cases; ``bench/fuzz_agent.py`` ten thousand.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

from py_agent import (Agent, InMemoryStore, MemoryPolicy, ModelNetworkError,
                      ModelUnavailableError, QuotaExceededError, RetryableToolError,
                      StepPolicy, StorageError, ToolPolicy, tool)
from py_agent.model import Purpose
from py_agent.sqlite_store import SqliteStore
from py_agent.testing import FunctionModel, PromptCall, step_json
from py_agent.transfer import parse_session

HANG_LIMIT_S = 10.0
STEP_TIMEOUT_S = 0.05
TOOL_TIMEOUT_S = 0.05

# ------------------------------------------------------------------ hostile text

UNICODE_EDGES = ["\ud800", "\udfff", "\ud83d\ude00", "\x00", "\ufeff", "\u202e", "e\u0301",
                 "\U0001f9d1\u200d\U0001f373", "日本語", "\uffff", "\u2028", "\x1b[31m",
                 "<script>alert(1)</script>", "'; DROP TABLE archive; --", "\\", '"', "\r\n"]
ESCAPES = ["\\ud800", "\\udc00", "\\ud83d\\ude00", "\\u0000", "\\n", '\\"', "\\\\"]


def weird_text(rng: random.Random, max_len: int = 40) -> str:
    parts = []
    for _ in range(rng.randint(0, 6)):
        choice = rng.random()
        if choice < 0.4:
            parts.append(rng.choice(UNICODE_EDGES))
        elif choice < 0.8:
            parts.append("".join(rng.choice("abc xyz 123.,!?") for _ in range(rng.randint(1, max_len))))
        else:
            parts.append(chr(rng.randint(0, 0x10FFFF)))
    return "".join(parts)


def deep_json(rng: random.Random, levels: int) -> str:
    opener, closer = rng.choice([('{"a":', "}"), ("[", "]"), ('{"toolInput":[', "]}")])
    return opener * levels + rng.choice(["1", '"x"', "null", ""]) + closer * levels


def json_with_escapes(rng: random.Random) -> str:
    text = "".join(rng.choice(ESCAPES + ["ok ", "fine "]) for _ in range(rng.randint(1, 6)))
    return ('{"thought": "' + text + '", "toolName": "none", "toolInput": "", '
            '"finalAnswer": "' + text + '"}')


# ------------------------------------------------------------------ the scripted model

class Hang:
    """A reply that never comes (or, with ``stubborn``, ignores cancellation a while)."""

    def __init__(self, stubborn: float = 0.0) -> None:
        self.stubborn = stubborn

    async def __call__(self) -> str:
        if not self.stubborn:
            await asyncio.Event().wait()
        until = time.perf_counter() + self.stubborn
        while time.perf_counter() < until:
            try:
                await asyncio.sleep(until - time.perf_counter())
            except asyncio.CancelledError:
                continue
        return step_json(answer="too late")


MODEL_EXCEPTIONS: list[Callable[[], BaseException]] = [
    lambda: OSError("connection reset"), lambda: TimeoutError(), lambda: KeyError("choices"),
    lambda: ValueError("bad"), lambda: RuntimeError("bug"), lambda: RecursionError("deep"),
    lambda: MemoryError(), lambda: SystemExit(1), lambda: KeyboardInterrupt(),
    lambda: asyncio.CancelledError(), lambda: GeneratorExit(),
    lambda: ModelUnavailableError("gone"), lambda: ModelNetworkError("flaky"),
    lambda: QuotaExceededError("full", requested=10_000, quota=9216),
    lambda: UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"),
]


def hostile_step(rng: random.Random, tools: list[str]) -> Any:
    """One step reply: text, a value that is not text, an exception, or a Hang."""
    kind = rng.random()
    name = rng.choice(tools)
    if kind < 0.14:
        return step_json(thought=weird_text(rng), answer=weird_text(rng) or "ok")
    if kind < 0.28:
        return step_json(thought=weird_text(rng), tool=name, tool_input=rng.choice([
            "", weird_text(rng), {"text": weird_text(rng)}, {"text": 5}, {"nope": 1},
            [1, 2], True, 3.5, None, {"text": {"deep": [[[["x"]]]]}}, "{" * 3000,
            '{"text": ' + "[" * 2000 + "]" * 2000 + "}"]))
    if kind < 0.34:
        return json.dumps({"thought": "", "toolName": rng.choice(
            ["launch", "", None, 5, ["calc"], {"n": 1}, weird_text(rng)]),
            "toolInput": "", "finalAnswer": rng.choice(["", None, 7, [], weird_text(rng)])})
    if kind < 0.42:
        good = step_json(thought="t", tool=name, tool_input="x")
        return good[:rng.randint(0, len(good))]  # truncated
    if kind < 0.48:
        return rng.choice(["", "   ", "null", "[]", "{}", "true", "not json at all",
                           "```json\n" + step_json(answer="fenced") + "\n```",
                           "Sure! " + step_json(answer="chatter") + " Hope this helps.",
                           step_json(answer="one") + step_json(answer="two"),
                           '{"toolName": "none", "finalAnswer": NaN}',
                           '{"toolName": "none", "finalAnswer": 1e999}',
                           '{"toolName": "none", "finalAnswer": ' + "9" * 5000 + "}"])
    if kind < 0.56:
        return deep_json(rng, rng.choice([100, 1000, 5000, 20_000, 60_000]))
    if kind < 0.62:
        return json_with_escapes(rng)
    if kind < 0.66:
        size = rng.choice([60_000, 300_000, 2_000_000])
        return rng.choice([step_json(answer="x" * size), "x" * size, "{" * size])
    if kind < 0.70:
        return "".join(rng.choice(UNICODE_EDGES) for _ in range(rng.randint(1, 50)))
    if kind < 0.80:
        return MODEL_EXCEPTIONS[rng.randrange(len(MODEL_EXCEPTIONS))]()
    if kind < 0.83:
        return Hang(stubborn=rng.choice([0.0, 0.0, 0.2]))
    if kind < 0.86:
        return rng.choice([None, 42, {"finalAnswer": "dict"}, b"\xff\xfe bytes", ["x"]])
    if kind < 0.90:
        return step_json(tool="compact", tool_input=rng.choice(
            [{"focus": weird_text(rng)}, {"focus": {"x": 1}}, 5, ""]))
    return step_json(thought="calculate", tool="calculate", tool_input={"expression": rng.choice(
        ["((9**999)**999)**99", "2**1000", "1/0", "sqrt(-1)", "(" * 150 + "1" + ")" * 150,
         "10**999*10", "round(1.5, 10**20)", weird_text(rng)])})


def hostile_memory_reply(rng: random.Random, purpose: Purpose) -> Any:
    """A summary or fact-extraction reply: mostly fine, sometimes hostile (never a hang:
    compaction's deadlines are the memory issue's)."""
    kind = rng.random()
    if kind < 0.6:
        if purpose is Purpose.FACTS:
            return json.dumps({"facts": [{"category": rng.choice(["preference", "need", 5]),
                                          "text": weird_text(rng) or "likes tea"}]})
        return "The user talked about " + (weird_text(rng) or "things") + " at some length."
    if kind < 0.7:
        return deep_json(rng, 20_000)
    if kind < 0.8:
        return json_with_escapes(rng)
    if kind < 0.9:
        return "[" + "[" * 5000
    return MODEL_EXCEPTIONS[rng.randrange(len(MODEL_EXCEPTIONS))]()


class ScriptedModel:
    """Replies with the hostile script through a FunctionModel (context accounting,
    clones); values that are not text bypass its JSON conversion."""

    def __init__(self, rng: random.Random, tools: list[str], window: int) -> None:
        self.rng = rng
        self.tools = tools
        self.inner = FunctionModel(self._respond, context_window=window)
        self.raw: Any = None

    async def _respond(self, call: PromptCall) -> str:
        if call.purpose is Purpose.STEP:
            reply = hostile_step(self.rng, self.tools)
        else:
            reply = hostile_memory_reply(self.rng, call.purpose)
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, Hang):
            return await reply()
        if not isinstance(reply, str) or len(reply) > 50_000:
            # Values that are not text, and huge ones (which the double would spend
            # seconds counting tokens of), go to the agent as they are.
            self.raw = reply
            return "__RAW__"
        return reply

    async def availability(self):
        return "available"

    async def create(self, *, initial_prompts, purpose=Purpose.STEP):
        return RawReplies(self, await self.inner.create(initial_prompts=initial_prompts,
                                                        purpose=purpose))


class RawReplies:
    """A FunctionSession that hands back the scripted non-text value where asked."""

    def __init__(self, model: ScriptedModel, inner) -> None:
        self.model, self.inner = model, inner

    context_window = property(lambda self: self.inner.context_window)
    context_usage = property(lambda self: self.inner.context_usage)

    async def prompt(self, text, **kwargs):
        reply = await self.inner.prompt(text, **kwargs)
        return self.model.raw if reply == "__RAW__" else reply

    async def measure(self, text):
        return await self.inner.measure(text)

    async def clone(self):
        return RawReplies(self.model, await self.inner.clone())

    async def destroy(self):
        await self.inner.destroy()


# ------------------------------------------------------------------ hostile tools

def make_tools(rng: random.Random) -> list:
    def behaviour(text: Any) -> Any:
        kind = rng.random()
        if kind < 0.35:
            return f"result for {text!r}"
        if kind < 0.45:
            nested: Any = []
            for _ in range(rng.choice([10, 5000])):
                nested = [nested]
            return rng.choice([nested, {"a": weird_text(rng)}, b"\xff", weird_text(rng),
                               "y" * 100_000, None, 1e308 * 10, object()])
        if kind < 0.55:
            raise rng.choice([ValueError, KeyError, RuntimeError, OSError, TypeError])("tool bug")
        if kind < 0.6:
            raise RetryableToolError("try again")
        if kind < 0.7:
            raise rng.choice([SystemExit, KeyboardInterrupt, asyncio.CancelledError,
                              GeneratorExit, MemoryError])()
        return "HANG"

    @tool
    def lookup(text: str) -> str:
        """Look something up in the notes."""
        value = behaviour(text)
        if value == "HANG":
            time.sleep(TOOL_TIMEOUT_S * 4)  # a thread the agent must stop waiting for
            return "late"
        return value

    @tool
    async def fetch_page(text: str) -> str:
        """Fetch a page of the manual."""
        value = behaviour(text)
        if value == "HANG":
            await Hang(stubborn=rng.choice([0.0, 0.1]))()
        return value

    from demo_tools.calculator import calculate
    return [lookup, fetch_page, calculate]


# ------------------------------------------------------------------ stores

class FlakyStore(InMemoryStore):
    """An in-memory store whose writes fail now and then (a full disk, a blocked db)."""

    def __init__(self, rng: random.Random, rate: float) -> None:
        super().__init__()
        self.rng, self.rate = rng, rate

    def _check_failure(self) -> None:
        if self.rng.random() < self.rate:
            raise StorageError("simulated storage failure", kind="quota")
        super()._check_failure()


def make_store(rng: random.Random):
    kind = rng.random()
    if kind < 0.5:
        return InMemoryStore(), "memory"
    if kind < 0.8:
        return SqliteStore(":memory:"), "sqlite"
    return FlakyStore(rng, 0.3), "flaky"


# ------------------------------------------------------------------ one case

@dataclass
class FuzzReport:
    cases: int = 0
    turns: int = 0
    escapes: int = 0
    hangs: int = 0
    unreadable: int = 0
    lost: int = 0
    duplicates: int = 0
    unindexed: int = 0
    statuses: Counter = field(default_factory=Counter)
    stores: Counter = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def clean(self) -> bool:
        return not (self.escapes or self.hangs or self.unreadable or self.lost or self.duplicates
                    or self.unindexed)

    def note(self, seed: int, what: str) -> None:
        if len(self.failures) < 50:
            self.failures.append(f"seed {seed}: {what}")


async def _case(seed: int, report: FuzzReport) -> None:
    rng = random.Random(seed)
    store, store_kind = make_store(rng)
    report.stores[store_kind] += 1
    tools = make_tools(rng)
    window = rng.choice([3500, 9216])
    memory = MemoryPolicy(reserved_turn_tokens=900, summary_target_tokens=200,
                          summary_max_tokens=400) if window < 5000 else MemoryPolicy()

    def new_agent() -> Agent:
        model = ScriptedModel(rng, [t.name for t in tools] + ["compact"], window)
        return Agent(model=model, store=store, tools=tools, memory=memory, max_steps=4,
                     step_policy=StepPolicy(timeout_s=STEP_TIMEOUT_S),
                     tool_policy=ToolPolicy(timeout_s=TOOL_TIMEOUT_S, max_attempts=2,
                                            backoff_s=0.001))

    agents = [new_agent()] + ([new_agent()] if rng.random() < 0.2 else [])
    sent: list[tuple[Agent, str, Any]] = []
    for n in range(rng.randint(1, 4)):
        agent = rng.choice(agents)
        message = (weird_text(rng) + " " + rng.choice(["look up", "fetch the page",
                                                       "calculate", "hello"])).strip()
        abort = asyncio.Event()
        if rng.random() < 0.1:
            asyncio.get_running_loop().call_later(rng.random() * 0.05, abort.set)
        report.turns += 1
        try:
            result = await asyncio.wait_for(agent.run(message, session_id="fuzz", abort=abort),
                                            HANG_LIMIT_S)
        except asyncio.TimeoutError:
            report.hangs += 1
            report.note(seed, f"turn {n} hung")
            return
        except BaseException as exc:  # noqa: BLE001 - counting exactly these
            report.escapes += 1
            report.note(seed, f"turn {n} raised {type(exc).__name__}: {exc!r}"[:300])
            return
        report.statuses[result.status] += 1
        sent.append((agent, message, result))
    try:
        await asyncio.wait_for(asyncio.gather(*(a.wait_idle() for a in agents)), HANG_LIMIT_S)
    except asyncio.TimeoutError:
        report.hangs += 1
        report.note(seed, "background compaction hung")
        return
    await _check(seed, report, store, agents, sent)


async def _check(seed: int, report: FuzzReport, store, agents: list[Agent],
                 sent: list[tuple[Agent, str, Any]]) -> None:
    from py_agent.boundary import clean_text

    # Lost and duplicated turns, through each agent that sent something (its unsaved turns
    # count: they are kept in memory, shown and exportable). A saved turn keeps its id; an
    # unsaved one's id is provisional (another writer may take it while storage fails; the
    # turn gets the next free id when it is saved), so it is found by its message.
    senders = list({id(agent): agent for agent, _, _ in sent}.values())
    transcripts = {id(agent): await agent.transcript("fuzz") for agent in senders}
    saved_ids = [r.turn_id for _, _, r in sent if r.saved]
    views_unique = all(len({t.id for t in turns}) == len(turns) for turns in transcripts.values())
    if len(saved_ids) != len(set(saved_ids)) or not views_unique:
        report.duplicates += 1
        report.note(seed, f"duplicate turn ids: saved {saved_ids}")
    for agent, message, result in sent:
        expected = clean_text(message).strip()
        turns = transcripts[id(agent)]
        if result.saved:
            found = [t for t in turns if t.id == result.turn_id]
        else:
            found = [t for t in turns if t.user == expected]
        if not any(t.user == expected and t.status == result.status for t in found):
            report.lost += 1
            report.note(seed, f"turn {result.turn_id} ({result.status}) missing or changed")
            return
    # Unreadable: a fresh agent on the same store (what a reload sees), if anything was
    # saved; then the export must be UTF-8 and import again.
    if not await store.list_sessions():
        return
    try:
        fresh = Agent(model=FunctionModel(lambda call: step_json(answer="ok")), store=store)
        state = await fresh.memory_state("fuzz")
        json.dumps(state.to_dict(), ensure_ascii=False).encode("utf-8")
        exported = await fresh.export_session("fuzz")
        exported.encode("utf-8")
        bundle = parse_session(exported)
        other = Agent(model=fresh.model, store=InMemoryStore())
        await other.import_bundle(bundle)
        saved = {t.id for t in await fresh.transcript("fuzz")}
        compacted = {i for r in await fresh.compressions("fuzz") if r.ok for i in r.turn_ids}
        raw = {t.id for t in state.recent_turns}
        answered = {t.id for t in await fresh.transcript("fuzz") if t.in_memory}
        missing = answered - raw - compacted
        if missing and not any(a.sessions.unsaved("fuzz") for a in agents) and saved:
            report.lost += 1
            report.note(seed, f"answered turns {sorted(missing)} in no memory")
        # The recall index follows the archive: what a reload loads holds every turn.
        await fresh.archive_recall.settled()
        unindexed = saved - set(fresh.archive_recall.index.turn_ids("fuzz"))
        if unindexed:
            report.unindexed += 1
            report.note(seed, f"archived turns {sorted(unindexed)} not in the recall index")
    except Exception as exc:  # noqa: BLE001
        report.unreadable += 1
        report.note(seed, f"unreadable: {type(exc).__name__}: {exc}"[:300])


def run_cases(seeds: range) -> FuzzReport:
    """Run one case per seed, each on its own event loop; returns the counts."""
    report = FuzzReport()
    started = time.perf_counter()
    for seed in seeds:
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(_case(seed, report))
        except BaseException as exc:  # noqa: BLE001 - whatever stopped the loop itself
            report.escapes += 1
            report.note(seed, f"the event loop stopped: {type(exc).__name__}: {exc!r}"[:300])
        finally:
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.wait(pending, timeout=2))
            loop.close()
        report.cases += 1
    report.seconds = time.perf_counter() - started
    return report
