import asyncio
import json

import pytest

from py_agent import (Agent, InMemoryStore, ModelAbortedError, ModelError, ModelNetworkError,
                      ModelUnavailableError, QuotaExceededError, StorageError, Turn)
from py_agent.host import AgentHost
from py_agent.model import Purpose
from py_agent.profile import ProfileFact, UserProfile
from py_agent.rpc import BridgeModel, RpcStore, model_error
from py_agent.state import CompressionRecord, SessionState
from py_agent.store import StateConflictError
from py_agent.testing import FunctionModel, context_text, user_message
from tests.unit.support import echo_agent_reply, make_responder, run, stopped_turn


def host_transport(model: FunctionModel, log: list):
    """Plays the LLM host: sessions by id, errors as {ok: false, error: {name, ...}}."""
    sessions = {}
    ids = iter(range(1, 10_000))

    def info(session):
        sid = f"s{next(ids)}"
        sessions[sid] = session
        return {"sessionId": sid, "contextWindow": session.context_window,
                "contextUsage": session.context_usage}

    async def transport(method, args):
        log.append((method, args))
        try:
            if method == "availability":
                return {"ok": True, "value": await model.availability()}
            if method == "create":
                return {"ok": True, "value": info(await model.create(
                    initial_prompts=args[0]["initialPrompts"]))}
            if method == "clone":
                return {"ok": True, "value": info(await sessions[args[0]].clone())}
            if method == "prompt":
                session = sessions[args[0]]
                text = await session.prompt(args[1], response_constraint=args[2]["responseConstraint"],
                                            purpose=Purpose(args[2]["purpose"]))
                return {"ok": True, "value": {"text": text, "contextUsage": session.context_usage,
                                              "contextWindow": session.context_window}}
            if method == "append":
                session = sessions[args[0]]
                await session.append(args[1])
                return {"ok": True, "value": {"contextUsage": session.context_usage,
                                              "contextWindow": session.context_window}}
            if method == "measure":
                return {"ok": True, "value": await sessions[args[0]].measure(args[1])}
            if method == "destroy":
                await sessions.pop(args[0]).destroy()
                return {"ok": True, "value": None}
            if method == "abort":
                return {"ok": True, "value": True}
        except QuotaExceededError as exc:
            return {"ok": False, "error": {"name": "QuotaExceededError", "message": str(exc),
                                           "requested": exc.requested, "quota": exc.quota}}
        except Exception as exc:
            return {"ok": False, "error": {"name": type(exc).__name__, "message": str(exc)}}
        return {"ok": False, "error": {"name": "TypeError", "message": f"unknown {method}"}}

    return transport, sessions


def store_transport(backing: InMemoryStore, fail: dict):
    """Plays the IndexedDB module: JSON strings in and out."""

    async def transport(method, args):
        if fail.get(method):
            return {"ok": False, "error": {"name": fail.pop(method), "message": "disk full"}}
        if method == "load":
            state = await backing.load(args[0])
            return {"ok": True, "value": None if state is None else json.dumps(state.to_dict())}
        if method == "save":
            await backing.save(SessionState.from_dict(json.loads(args[0])))
        elif method == "commitTurn":
            await backing.commit_turn(SessionState.from_dict(json.loads(args[0])),
                                      [Turn.from_dict(t) for t in json.loads(args[1])])
        elif method == "readArchive":
            return {"ok": True, "value": json.dumps([t.to_dict() for t in await backing.read_archive(args[0])])}
        elif method == "listSessions":
            return {"ok": True, "value": json.dumps([vars(i) for i in await backing.list_sessions()])}
        elif method == "deleteSession":
            return {"ok": True, "value": await backing.delete_session(args[0])}
        elif method == "commitCompaction":
            state = None if args[0] is None else SessionState.from_dict(json.loads(args[0]))
            profile = None if args[2] is None else UserProfile.from_dict(json.loads(args[2]))
            await backing.commit_compaction(state, CompressionRecord.from_dict(json.loads(args[1])),
                                            profile)
        elif method == "loadProfile":
            profile = await backing.load_profile()
            return {"ok": True, "value": json.dumps(profile.to_dict()) if profile.version else None}
        elif method == "saveProfile":
            try:
                await backing.save_profile(
                    UserProfile.from_dict(json.loads(args[0])),
                    None if args[1] is None else SessionState.from_dict(json.loads(args[1])))
            except StateConflictError as exc:
                return {"ok": False, "error": {"name": "StateConflictError", "message": str(exc)}}
        return {"ok": True, "value": None}

    return transport


@pytest.mark.parametrize("name, cls", [
    ("QuotaExceededError", QuotaExceededError), ("NotSupportedError", ModelUnavailableError),
    ("ModelUnavailableError", ModelUnavailableError), ("AbortError", ModelAbortedError),
    ("NetworkError", ModelNetworkError), ("WeirdError", ModelError),
])
def test_errors_cross_the_bridge_as_typed_exceptions(name, cls):
    error = model_error({"name": name, "message": "boom", "requested": 10, "quota": 5})
    assert type(error) is cls and "boom" in str(error)
    if cls is QuotaExceededError:
        assert error.requested == 10 and error.quota == 5


def test_an_agent_over_the_bridge_runs_and_tracks_context_usage():
    log = []
    model = FunctionModel(make_responder(echo_agent_reply))
    transport, sessions = host_transport(model, log)
    bridge = BridgeModel(transport, stream_purposes=frozenset({Purpose.STEP}))
    agent = Agent(model=bridge, store=InMemoryStore())
    result = run(agent.run("hello over the bridge", session_id="a"))
    assert result.answer == "You said: hello over the bridge"
    methods = [m for m, _ in log]
    assert methods[:2] == ["create", "measure"] and "clone" in methods and "destroy" in methods
    prompt_args = next(a for m, a in log if m == "prompt")
    assert prompt_args[2]["stream"] is True and prompt_args[2]["requestId"] == "r1"
    assert len(sessions) == 2  # only the base session and the chat's memory session live
    base = next(iter(sessions.values()))
    assert agent.bases.existing(Purpose.STEP).context_usage == base.context_usage > 0


def test_bridge_model_declares_english_text_for_availability_and_create():
    log = []
    transport, _ = host_transport(FunctionModel(make_responder(echo_agent_reply)), log)
    bridge = BridgeModel(transport)
    assert run(bridge.availability()) == "available"
    run(bridge.create(initial_prompts=[{"role": "system", "content": "Be brief."}]))
    english = [{"type": "text", "languages": ["en"]}]
    (_, [availability_options]), (_, [create_options]) = log
    assert availability_options == {"expectedInputs": english, "expectedOutputs": english}
    assert create_options["expectedInputs"] == english
    assert create_options["expectedOutputs"] == english
    assert create_options["initialPrompts"] == [{"role": "system", "content": "Be brief."}]
    assert BridgeModel(transport, languages=("es", "en")).expected_io()["expectedOutputs"] == [
        {"type": "text", "languages": ["es", "en"]}]


def test_bridge_model_remembers_the_window_for_estimated_budgets():
    log = []
    transport, _ = host_transport(FunctionModel(make_responder(echo_agent_reply),
                                                context_window=4096), log)
    bridge = BridgeModel(transport)
    state = SessionState("a", recent_turns=[Turn(1, "hi", "hello")], next_turn_id=2)
    assert bridge.context_window is None   # no session yet: the agent's default
    assert Agent(model=bridge, store=InMemoryStore()).estimated_budget(state) \
        .context_window == 9216
    run(bridge.create(initial_prompts=[]))
    assert bridge.context_window == 4096
    # A fresh agent on the same model (no session of its own yet) estimates with it.
    agent = Agent(model=bridge, store=InMemoryStore())
    assert agent.estimated_budget(state).context_window == 4096
    # Only a plain positive int counts.
    for odd in (4096.0, "4096", True, 0, -5):
        bridge.context_window = odd
        assert agent.estimated_budget(state).context_window == 9216, odd


def test_quota_errors_from_the_host_reach_the_agent_typed():
    log = []
    model = FunctionModel(make_responder(echo_agent_reply), context_window=2600)
    transport, _ = host_transport(model, log)
    agent = Agent(model=BridgeModel(transport), store=InMemoryStore(),
                  memory=__import__("py_agent").MemoryPolicy(reserved_turn_tokens=600,
                                                             summary_target_tokens=100,
                                                             summary_max_tokens=200))
    result = run(agent.run("word " * 3000, session_id="a"))
    assert result.status == "error" and "too long" in result.answer


def test_an_overflowed_reply_is_not_trusted_and_the_turn_restarts():
    log = []
    model = FunctionModel(make_responder(echo_agent_reply))
    transport, _ = host_transport(model, log)
    overflow = {"left": 1}

    async def overflowing(method, args):
        reply = await transport(method, args)
        if method == "prompt" and args[2]["purpose"] == "step" and overflow["left"]:
            overflow["left"] -= 1
            reply["value"]["overflowed"] = True
        return reply

    agent = Agent(model=BridgeModel(overflowing), store=InMemoryStore())
    result = run(agent.run("hello", session_id="a"))
    assert result.answer == "You said: hello" and result.status == "answered"
    # The memory session (a clone of the base), the turn's clone of it, and the restart
    # on a fresh clone of the plain base, which does not trust the memory session.
    assert [m for m, _ in log].count("clone") == 3
    assert agent.memory_sessions.live == 0  # dropped: it is rebuilt on the next turn


def test_appends_go_over_the_bridge_and_an_overflowed_one_is_never_cloned():
    log = []
    model = FunctionModel(make_responder(echo_agent_reply))
    transport, sessions = host_transport(model, log)
    overflow = {"left": 0}

    async def overflowing(method, args):
        reply = await transport(method, args)
        if method == "append" and overflow["left"]:
            overflow["left"] -= 1
            reply["value"]["overflowed"] = True  # Chrome evicted context to fit it
        return reply

    agent = Agent(model=BridgeModel(overflowing), store=InMemoryStore())

    async def scenario():
        await agent.run("My cat is called Miso.", session_id="a")
        await agent.memory_sessions.wait_idle()
        appended = [a for m, a in log if m == "append"]
        assert appended and "Miso" in appended[-1][1]
        overflow["left"] = 1
        await agent.run("Second message.", session_id="a")
        await agent.memory_sessions.wait_idle()
        assert agent.memory_sessions.live == 0  # dropped, not kept half-evicted
        await agent.run("What is my cat called?", session_id="a")

    run(scenario())
    assert agent.memory_sessions.live == 1
    last = [s for s in model.calls_for(Purpose.STEP) if user_message(s)][-1]
    assert "Miso" in context_text(last) and "Second message." in context_text(last)
    assert "Miso" not in last.input


def test_cancelling_a_prompt_aborts_it_on_the_other_side():
    log = []
    model = FunctionModel(make_responder(echo_agent_reply), latency=5)
    transport, _ = host_transport(model, log)
    agent = Agent(model=BridgeModel(transport), store=InMemoryStore())

    async def scenario():
        result = await stopped_turn(agent, "slow", after=0.05, session_id="a")
        await asyncio.sleep(0.01)  # the abort request reaches the host
        return result

    assert run(scenario()).status == "stopped"
    assert ("abort", ["r1"]) in log


def test_rpc_store_round_trips_and_maps_storage_errors():
    backing, fail = InMemoryStore(), {}
    store = RpcStore(store_transport(backing, fail))
    state = SessionState("x", title="t", recent_turns=[Turn(1, "hi", "hello")], next_turn_id=2)
    run(store.commit_turn(state, state.recent_turns))
    assert run(store.load("x")) == state
    assert [t.user for t in run(store.read_archive("x"))] == ["hi"]
    assert [i.session_id for i in run(store.list_sessions())] == ["x"]
    fail["commitTurn"] = "StorageQuotaError"
    with pytest.raises(StorageError) as err:
        run(store.commit_turn(state, []))
    assert err.value.kind == "quota"
    assert run(store.delete_session("x")) is True and run(store.load("x")) is None


def test_rpc_store_keeps_the_user_profile_with_its_version():
    backing = InMemoryStore()
    store = RpcStore(store_transport(backing, {}))
    assert run(store.load_profile()) == UserProfile()
    profile = UserProfile(facts=[ProfileFact("p1", "need", "a quiet table", "x", "f1", 3, 9.0)],
                          next_id=2)
    run(store.save_profile(profile, SessionState("x", private=True)))
    assert profile.version == 1 and run(store.load_profile()) == profile
    assert run(backing.load("x")).private is True
    with pytest.raises(StateConflictError):  # written from version 0 again: refused
        run(store.save_profile(UserProfile()))
    record = CompressionRecord(session_id="x", started_at=1.0, duration_ms=1.0, ok=True,
                               turn_ids=[], previous_summary="", summary_prompt="", summary="")
    run(store.commit_compaction(None, record, profile))
    assert profile.version == 2 and run(backing.load_profile()).version == 2


def host_for(agent: Agent):
    """An AgentHost posting into a list; ``ask(message)`` handles one request and returns
    the reply to it."""
    posted = []
    host = AgentHost(agent, posted.append)

    async def ask(message):
        await host.handle(message)
        return next(p for p in reversed(posted) if p["type"] == "reply" and p["id"] == message["id"])

    return host, posted, ask


def test_host_routes_requests_streams_events_and_reports_errors():
    model = FunctionModel(make_responder(echo_agent_reply))
    _, posted, ask = host_for(Agent(model=model, store=InMemoryStore()))

    reply = run(ask({"type": "run", "id": 1, "session_id": "a", "text": "hi"}))
    assert reply["ok"] and reply["value"]["answer"] == "You said: hi"
    events = [p["event"]["type"] for p in posted if p["type"] == "event"]
    assert events[0] == "turn_started" and "answer" in events
    memory = run(ask({"type": "memory", "id": 2, "session_id": "a"}))
    assert memory["value"]["recent_turns"][0]["user"] == "hi" and memory["value"]["compressions"] == []
    assert run(ask({"type": "sessions", "id": 3}))["value"][0]["session_id"] == "a"
    unknown = run(ask({"type": "memory", "id": 4, "session_id": "zzz"}))
    assert not unknown["ok"] and unknown["error"]["name"] == "UnknownSessionError"
    bad = run(ask({"type": "launch", "id": 5}))
    assert not bad["ok"] and "unknown request type" in bad["error"]["message"]
    empty = run(ask({"type": "run", "id": 6, "session_id": "a", "text": "  "}))
    assert not empty["ok"] and "non-empty" in empty["error"]["message"]
    tools = run(ask({"type": "tools", "id": 7}))["value"]
    assert [t["name"] for t in tools] == ["compact", "recall"]   # the built-in tools


def test_host_stop_aborts_the_running_turn():
    model = FunctionModel(make_responder(echo_agent_reply), latency=5)
    host, posted, _ = host_for(Agent(model=model, store=InMemoryStore()))

    async def scenario():
        running = host.handle({"type": "run", "id": 1, "session_id": "a", "text": "slow"})
        await asyncio.sleep(0.05)
        await host.handle({"type": "stop", "id": 2, "session_id": "a"})
        await asyncio.wait_for(running, 2)

    run(scenario())
    reply = next(p for p in posted if p.get("id") == 1)
    assert reply["value"]["status"] == "stopped"
    assert next(p for p in posted if p.get("id") == 2)["value"] is True


def test_host_exports_and_imports_sessions():
    model = FunctionModel(make_responder(echo_agent_reply))
    store = InMemoryStore()
    _, _, ask = host_for(Agent(model=model, store=store))

    run(ask({"type": "run", "id": 1, "session_id": "a", "text": "Plans for Kyoto?"}))
    run(ask({"type": "run", "id": 2, "session_id": "a", "text": "and Osaka"}))
    exported = run(ask({"type": "export", "id": 3, "session_id": "a"}))["value"]
    assert exported["filename"] == "Plans-for-Kyoto.jsonl" and exported["turns"] == 2
    assert exported["text"].count("\n") == 3
    imported = run(ask({"type": "import", "id": 4, "text": exported["text"]}))["value"]
    assert imported == {"session_id": "a-2", "title": "Plans for Kyoto?", "turns": 2}
    named = run(ask({"type": "import", "id": 5, "text": exported["text"], "session_id": "b"}))
    assert named["value"]["session_id"] == "b"
    memory = run(ask({"type": "memory", "id": 6, "session_id": "a-2"}))["value"]
    assert [t["user"] for t in memory["recent_turns"]] == ["Plans for Kyoto?", "and Osaka"]
    sessions = run(ask({"type": "sessions", "id": 7}))["value"]
    assert sorted(s["session_id"] for s in sessions) == ["a", "a-2", "b"]

    bad = run(ask({"type": "import", "id": 8, "text": exported["text"] + "{not json\n"}))
    assert not bad["ok"] and bad["error"]["name"] == "SessionImportError"
    assert bad["error"]["line"] == 4
    assert bad["error"]["message"].startswith("line 4: not valid JSON")
    assert "traceback" not in bad["error"]
    empty = run(ask({"type": "import", "id": 9, "text": ""}))
    assert empty["error"] == {"name": "SessionImportError", "message": "the file is empty",
                              "line": None}
    missing = run(ask({"type": "import", "id": 10}))
    assert not missing["ok"] and "text must be" in missing["error"]["message"]
    unknown = run(ask({"type": "export", "id": 11, "session_id": "zzz"}))
    assert unknown["error"]["name"] == "UnknownSessionError"
    assert len(run(store.list_sessions())) == 3  # failed imports left nothing behind


def test_host_memory_has_an_estimated_budget_right_after_boot():
    store = InMemoryStore()
    run(store.commit_turn(SessionState("a", title="t", recent_turns=[Turn(1, "hi", "hello")],
                                       next_turn_id=2), [Turn(1, "hi", "hello")]))
    model = FunctionModel(make_responder(echo_agent_reply))
    _, _, ask = host_for(Agent(model=model, store=store))
    budget = run(ask({"type": "memory", "id": 1, "session_id": "a"}))["value"]["budget"]
    assert budget["estimated"] is True and budget["context_window"] == 9216
    assert budget["prefix"] > 0 and budget["turns"] > 0
    assert budget["turn_budget"] > budget["trigger"] > 0
    assert model.created == 0
