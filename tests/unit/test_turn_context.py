"""Per-turn data travels with the turn: two chats of one agent at once never cross.

The page tells a streamed piece's chat by the id it is tagged with (``conversationId``,
``StreamChunk.conversation_id``). Two turns of two chats running at once through the
host, and a background memory pass of one chat while the other chat's turn runs, must
each tag their pieces with their own chat: the model is shared, the tag is not.
"""

from __future__ import annotations

import asyncio

from py_agent import Agent, InMemoryStore, MemoryPolicy
from py_agent.host import AgentHost
from py_agent.model import Purpose
from py_agent.openai_compat import OpenAIModel, StreamChunk, Timeouts
from py_agent.rpc import BridgeModel
from py_agent.testing import FunctionModel
from tests.fake_openai_server import FakeServer, agent_responder
from tests.unit.support import echo_agent_reply, make_responder, run
from tests.unit.test_rpc_and_host import host_transport

TIMEOUTS = Timeouts(connect=2, read=5.0, call=20, probe=1.0)
CHATS = {"alpha": "Tell me about the alpha river", "beta": "Tell me about the beta mountain"}


def streamed_by_chat(chunks: list[StreamChunk]) -> dict[str, str]:
    """Every piece joined per chat tag, in arrival order."""
    joined: dict[str, str] = {}
    for chunk in chunks:
        joined[chunk.conversation_id] = joined.get(chunk.conversation_id, "") + chunk.delta
    return joined


def interleaved(chunks: list[StreamChunk]) -> bool:
    """True if two requests streamed at the same time (each had a piece before the
    other's last)."""
    spans: dict[str, list[int]] = {}
    for index, chunk in enumerate(chunks):
        spans.setdefault(chunk.request_id, []).append(index)
    firsts_lasts = [(s[0], s[-1]) for s in spans.values()]
    return any(a[0] < b[1] and b[0] < a[1]
               for i, a in enumerate(firsts_lasts) for b in firsts_lasts[i + 1:])


def server_agent(server: FakeServer, chunks: list[StreamChunk], **kwargs) -> Agent:
    model = OpenAIModel(server.url, "fake-model", context_window=8192, timeouts=TIMEOUTS,
                        on_chunk=chunks.append)
    return Agent(model=model, store=InMemoryStore(), **kwargs)


def test_two_turns_at_once_through_the_host_each_stream_only_their_own_chat():
    chunks: list[StreamChunk] = []
    posted: list[dict] = []
    with FakeServer(agent_responder, chunk_pause_s=0.004) as server:
        host = AgentHost(server_agent(server, chunks), posted.append)

        async def both() -> None:
            turns = [host.handle({"type": "run", "id": chat, "session_id": chat, "text": text})
                     for chat, text in CHATS.items()]
            await asyncio.wait_for(asyncio.gather(*turns), 30)

        run(both())
    replies = {p["id"]: p for p in posted if p["type"] == "reply"}
    for chat, text in CHATS.items():
        assert replies[chat]["ok"] and replies[chat]["value"]["answer"] == f"You said: {text}"
    steps = [c for c in chunks if c.purpose == Purpose.STEP.value]
    assert interleaved(steps), "the two turns did not stream at the same time"
    streamed = streamed_by_chat(steps)
    assert set(streamed) == set(CHATS)
    assert "alpha river" in streamed["alpha"] and "beta" not in streamed["alpha"]
    assert "beta mountain" in streamed["beta"] and "alpha" not in streamed["beta"]


def test_a_background_pass_tags_its_pieces_with_its_own_chat_not_the_running_turns():
    chunks: list[StreamChunk] = []
    posted: list[dict] = []
    with FakeServer(agent_responder, chunk_pause_s=0.004) as server:
        agent = server_agent(server, chunks, memory=MemoryPolicy(min_recent_turns=1))
        host = AgentHost(agent, posted.append)

        async def scenario() -> None:
            for i in range(3):
                await host.handle({"type": "run", "id": f"a{i}", "session_id": "alpha",
                                   "text": f"The alpha river, part {i}"})
            chunks.clear()
            # The compaction of alpha streams its summary while beta's turn streams.
            await asyncio.wait_for(asyncio.gather(
                host.handle({"type": "compact", "id": "c", "session_id": "alpha"}),
                host.handle({"type": "run", "id": "b", "session_id": "beta",
                             "text": CHATS["beta"]})), 30)

        run(scenario())
    assert next(p for p in posted if p.get("id") == "c")["ok"]
    memory = [c for c in chunks if c.purpose in (Purpose.SUMMARY.value, Purpose.FACTS.value)]
    steps = [c for c in chunks if c.purpose == Purpose.STEP.value]
    # Memory requests run one after another: an overlap is one of them and beta's step.
    assert memory and steps and interleaved(chunks)
    assert {c.conversation_id for c in memory} == {"alpha"}
    assert {c.conversation_id for c in steps} == {"beta"}


def test_over_the_bridge_each_prompt_names_the_chat_it_is_for():
    """The LLM host tags a prompt's pieces with the ``conversationId`` the prompt names:
    with two chats at once, each step prompt names its own."""
    log: list = []
    model = FunctionModel(make_responder(echo_agent_reply), latency=0.02)
    transport, _ = host_transport(model, log)
    bridge = BridgeModel(transport, stream_purposes=frozenset({Purpose.STEP}))
    posted: list[dict] = []
    host = AgentHost(Agent(model=bridge, store=InMemoryStore()), posted.append)

    async def both() -> None:
        await asyncio.wait_for(asyncio.gather(*[
            host.handle({"type": "run", "id": chat, "session_id": chat, "text": text})
            for chat, text in CHATS.items()]), 30)

    run(both())
    prompts = [args for method, args in log if method == "prompt"]
    assert len(prompts) == 2
    for _, text, options in prompts:
        chat = next(chat for chat, message in CHATS.items() if text.endswith(message))
        assert options["conversationId"] == chat, (options["conversationId"], text[-80:])
