"""The OpenAI-compatible backend against the fake server, over real HTTP on localhost."""

from __future__ import annotations

import asyncio
import json
import socket
import time

import pytest

from py_agent import Agent, InMemoryStore, QuotaExceededError
from demo_tools import calculate
from py_agent.model import Purpose, ResponseConstraintError
from py_agent.openai_compat import (AuthenticationError, BadRequestError, ContextLengthError, MalformedReplyError,
                                    ModelNotFoundError, OpenAIModel, RateLimitError,
                                    ServerFailureError, ServerTimeoutError, ServerUnreachableError,
                                    Timeouts)
from py_agent.prompting import initial_prompts, step_schema
from py_agent.testing import FunctionModel
from tests.fake_openai_server import (ChatRequest, Fail, FakeServer, Hang, Raw, Reply,
                                      agent_responder)
from tests.unit.support import run

FAST = Timeouts(connect=2, read=1.0, call=5, probe=1.0)


@pytest.fixture
def server():
    with FakeServer(agent_responder) as fake:
        yield fake


def model_for(server: FakeServer, **kwargs) -> OpenAIModel:
    kwargs.setdefault("timeouts", FAST)
    model = OpenAIModel(server.url, "fake-model", **kwargs)
    model.client.sleep = lambda seconds: asyncio.sleep(0)  # retries without waiting
    return model


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def one_prompt(model: OpenAIModel, text: str = "Hello", schema=None) -> str:
    session = await model.create(initial_prompts=[{"role": "system", "content": "Be brief."}])
    return await session.prompt(text, response_constraint=schema)


@pytest.mark.parametrize("stream", [True, False])
def test_a_prompt_sends_the_prefix_first_and_counts_tokens_from_usage(server, stream):
    model = model_for(server, stream=stream, context_window=4000)

    async def go():
        base = await model.create(initial_prompts=initial_prompts())
        before = base.context_usage
        first, second = await base.clone(), await base.clone()
        reply = await first.prompt("User: hi there")
        await second.prompt("User: something else")
        return reply, before, first

    reply, before, first = run(go())
    assert json.loads(reply)["finalAnswer"] == "You said: hi there"
    bodies = server.chat_requests()
    prefix = [{"role": m["role"], "content": m["content"]} for m in initial_prompts()]
    assert [b["messages"][:len(prefix)] for b in bodies] == [prefix, prefix]
    assert bodies[0]["stream"] is stream and bodies[0]["max_tokens"] <= 1024
    assert ("stream_options" in bodies[0]) is stream
    # usage: the server's prompt_tokens + completion_tokens, not our estimate
    from py_agent.testing import count_tokens
    expected = sum(count_tokens(m["content"]) + 4 for m in bodies[0]["messages"]) \
        + count_tokens(reply)
    assert first.context_usage == expected != before
    assert first.messages[-1] == {"role": "assistant", "content": reply}


def test_streamed_pieces_reach_on_chunk_with_the_purpose_and_the_sessions_chat(server):
    chunks = []
    model = model_for(server, on_chunk=chunks.append, context_window=4000)
    server.push(Reply(content="Streaming works fine, piece by piece.", chunk_chars=5))

    async def tagged_clone_prompts() -> str:
        base = await model.create(initial_prompts=[{"role": "system", "content": "Be brief."}])
        base.conversation_id = "s1"
        return await (await base.clone()).prompt("Hello")   # a clone keeps the tag

    reply = run(tagged_clone_prompts())
    assert reply == "Streaming works fine, piece by piece."
    assert len(chunks) == 8 and "".join(c.delta for c in chunks) == reply
    assert chunks[-1].text == reply and chunks[0].text == "Strea"
    assert {(c.purpose, c.conversation_id) for c in chunks} == {("step", "s1")}
    assert len({c.request_id for c in chunks}) == 1


def test_a_failing_on_chunk_handler_does_not_cost_the_reply(server):
    def broken(chunk):
        raise RuntimeError("display bug")

    model = model_for(server, on_chunk=broken, context_window=4000)
    assert json.loads(run(one_prompt(model, "User: hi")))["finalAnswer"] == "You said: hi"


def test_the_step_schema_goes_as_response_format(server):
    model = model_for(server, context_window=4000)
    schema = step_schema(["calculate"])
    run(one_prompt(model, "User: 2 times 3", schema))
    fmt = server.chat_requests()[0]["response_format"]
    assert fmt == {"type": "json_schema", "json_schema": {"name": "step", "schema": schema}}


@pytest.mark.parametrize("accepted,status,sent", [
    (("json_object",), 500, ["json_schema", "json_object", "json_object"]),  # llama-cpp-python
    (("json_object",), 400, ["json_schema", "json_object", "json_object"]),
])
def test_a_refused_response_format_steps_down_for_good(accepted, status, sent):
    with FakeServer(agent_responder, response_formats=accepted, refusal_status=status) as server:
        model = model_for(server, context_window=4000)
        schema = step_schema(["calculate"])
        first = run(one_prompt(model, "User: hi", schema))
        run(one_prompt(model, "User: again", schema))
        bodies = server.chat_requests()
    assert json.loads(first)["finalAnswer"] == "You said: hi"
    assert [(b.get("response_format") or {}).get("type") for b in bodies] == sent
    assert bodies[-1]["response_format"]["schema"] == schema
    assert model.describe()["structured_output"] == sent[-1]


def test_a_schema_refused_in_every_form_is_the_agents_to_simplify():
    """Neither form taken: a refused response constraint (the agent's ladder asks again
    under a simpler schema, or none); the forms are kept for that next schema."""
    with FakeServer(agent_responder, response_formats=()) as server:
        model = model_for(server, context_window=4000)
        with pytest.raises(ResponseConstraintError):
            run(one_prompt(model, "User: hi", step_schema(["calculate"])))
        plain = run(one_prompt(model, "User: hi"))
        bodies = server.chat_requests()
    assert json.loads(plain)["finalAnswer"] == "You said: hi"
    assert [(b.get("response_format") or {}).get("type") for b in bodies] == \
        ["json_schema", "json_object", None]
    assert model.describe()["structured_output"] == "json_schema"


def test_a_configured_mode_does_not_step_down():
    with FakeServer(agent_responder, response_formats=()) as server:
        model = model_for(server, context_window=4000, structured_output="json_schema")
        with pytest.raises(BadRequestError, match="response_format"):
            run(one_prompt(model, "User: hi", step_schema([])))


def test_a_server_refusing_stream_options_still_streams():
    with FakeServer(agent_responder, stream_options=False) as server:
        model = model_for(server, context_window=4000)
        assert json.loads(run(one_prompt(model, "User: hi")))["finalAnswer"] == "You said: hi"
        assert ["stream_options" in b for b in server.chat_requests()] == [True, False]


@pytest.mark.parametrize("stream", [True, False])
def test_native_tool_calls_are_read_as_a_step(server, stream):
    model = model_for(server, stream=stream, context_window=4000)
    server.push(Reply(tool_calls=[{"name": "calculate", "arguments": {"expression": "17 * 23"}}]))
    step = json.loads(run(one_prompt(model)))
    assert step == {"thought": "", "toolName": "calculate",
                    "toolInput": {"expression": "17 * 23"}, "finalAnswer": ""}


def test_an_agent_answers_through_the_calculator(server):
    model = model_for(server, context_window=6000)
    agent = Agent(model=model, store=InMemoryStore(), tools=[calculate])
    result = run(agent.run("What is 17 times 23?", session_id="s"))
    assert result.status == "answered", result.error
    assert [s.tool for s in result.steps] == ["calculate", "none"]
    assert result.answer == "The answer is 17 * 23 = 391."


def test_each_turn_sends_the_previous_turns_messages_first_for_the_servers_cache(server):
    # With a memory session, a turn's request is the prefix, the memory messages and
    # the new prompt; the next turn only adds messages before its prompt, so a server
    # with prefix caching reuses what it computed for the turn before.
    model = model_for(server, context_window=6000)
    agent = Agent(model=model, store=InMemoryStore())

    async def turns():
        for text in ("My name is Ada.", "I live in Bergen.", "What did I say before?"):
            await agent.run(text, session_id="s")
            await agent.memory_sessions.wait_idle()

    run(turns())
    steps = [b["messages"] for b in server.chat_requests() if b.get("response_format")]
    assert len(steps) == 3
    for before, after in zip(steps, steps[1:]):
        assert after[:len(before) - 1] == before[:-1] and len(after) > len(before) - 1
    assert all(m[-1]["content"].startswith("Tools for this request:") for m in steps)
    assert "User: I live in Bergen." in steps[2][-2]["content"]


# ------------------------------------------------------------------- errors

def test_an_unreachable_server_is_a_clear_retryable_error():
    model = OpenAIModel(f"http://127.0.0.1:{free_port()}/v1", "m", context_window=4000,
                        timeouts=FAST)
    model.client.sleep = lambda s: asyncio.sleep(0)
    with pytest.raises(ServerUnreachableError, match="Nothing is listening at http://127.0.0.1"):
        run(one_prompt(model))
    assert run(model.availability()) == "unavailable"
    assert isinstance(model.last_error, ServerUnreachableError)


def test_a_wrong_key_says_which_variable_to_set_and_never_shows_the_key():
    with FakeServer(agent_responder, api_key="right-key") as server:
        model = model_for(server, api_key="wrong-secret-key", context_window=4000)
        with pytest.raises(AuthenticationError) as caught:
            run(one_prompt(model))
        assert server.chat_requests()  # the request was made, with the header
        assert server.requests[-1]["headers"]["authorization"] == "Bearer wrong-secret-key"
        good = model_for(server, api_key="right-key", context_window=4000)
        assert run(one_prompt(good, "User: ok")) 
    assert "PY_AGENT_API_KEY" in str(caught.value) and caught.value.status == 401
    assert "wrong-secret-key" not in str(caught.value) + repr(model) + repr(model.client)


def test_an_unknown_model_is_a_404_naming_it(server):
    model = OpenAIModel(server.url, "no-such-model", context_window=4000, timeouts=FAST)
    with pytest.raises(ModelNotFoundError, match="no model 'no-such-model'") as caught:
        run(one_prompt(model))
    assert str(caught.value).endswith("Models this server has: fake-model.")
    assert caught.value.code == "model_not_found"


def test_429_is_retried_after_the_wait_the_server_asks(server):
    model = model_for(server, context_window=4000)
    waits = []

    async def sleep(seconds):
        waits.append(seconds)

    model.client.sleep = sleep
    server.push(Fail(429, "Rate limit reached", type="requests", code="rate_limit_exceeded",
                     retry_after="2"))
    assert json.loads(run(one_prompt(model, "User: hi")))["finalAnswer"] == "You said: hi"
    assert waits == [2.0] and len(server.chat_requests()) == 2


def test_429_with_a_long_wait_is_raised_with_retry_after(server):
    model = model_for(server, context_window=4000)
    server.push(Fail(429, "Rate limit reached", code="rate_limit_exceeded", retry_after="120"))
    with pytest.raises(RateLimitError, match="wait 120 s") as caught:
        run(one_prompt(model))
    assert caught.value.retry_after == 120 and caught.value.retryable


def test_503_is_retried_and_500_is_not(server):
    model = model_for(server, context_window=4000)
    server.push(Fail(503, "overloaded", type="server_error"), "fine")
    assert run(one_prompt(model)) == "fine"
    server.push(Fail(500, "boom", type="server_error"), "never sent")
    with pytest.raises(ServerFailureError, match=r"failed \(500\).*boom"):
        run(one_prompt(model))
    assert server.queued == ["never sent"]  # 500 was not retried
    server.queued.clear()
    server.push(*[Fail(503, "still overloaded")] * 3)
    with pytest.raises(ServerFailureError, match="503"):
        run(one_prompt(model))


@pytest.mark.parametrize("raw", [
    Raw(b"<html>Bad Gateway</html>", content_type="text/html"),
    Raw(b'{"object": "chat.completion", "choices": []}'),
    Raw(b'data: {"choices": [{"delta": {"content": "hi"}}]}\n\ndata: {oops\n\n',
        content_type="text/event-stream"),
])
def test_malformed_replies_are_typed(server, raw):
    model = model_for(server, context_window=4000)
    server.push(raw)
    with pytest.raises(MalformedReplyError):
        run(one_prompt(model))


def test_a_hanging_server_times_out(server):
    model = model_for(server, context_window=4000, max_retries=0)
    server.push(Hang(10))
    started = time.perf_counter()
    with pytest.raises(ServerTimeoutError, match="did not answer within 1 s"):
        run(one_prompt(model))
    assert time.perf_counter() - started < 3


def test_a_stream_that_stalls_or_breaks_midway_is_an_error(server):
    model = model_for(server, context_window=4000)
    server.push(Reply(content="a long reply that stops", hang_after_chunks=2))
    with pytest.raises(ServerTimeoutError, match="went silent"):
        run(one_prompt(model))
    server.push(Reply(content="a long reply that breaks", close_after_chunks=3))
    with pytest.raises(ServerFailureError, match="closed the connection"):
        run(one_prompt(model))
    server.push(Raw(b'data: {"choices": [{"index": 0, "delta": {"content": "cut"}}]}\n\n',
                    content_type="text/event-stream"))
    with pytest.raises(ServerFailureError, match="ended the stream before"):
        run(one_prompt(model))


def test_the_servers_context_length_error_is_a_quota_error():
    with FakeServer(agent_responder, context_window=60) as server:
        model = model_for(server, context_window=4000)  # configured wrongly large
        with pytest.raises(ContextLengthError) as caught:
            run(one_prompt(model, "word " * 100))
    assert isinstance(caught.value, QuotaExceededError)


def test_an_empty_stream_is_asked_again_unstreamed_to_learn_why(server):
    model = model_for(server, context_window=4000)
    server.push(Raw(b"", content_type="text/event-stream"),  # llama-cpp-python's way
                Fail(400, "This model's maximum context length is 4096 tokens.",
                     code="context_length_exceeded"))
    with pytest.raises(ContextLengthError):
        run(one_prompt(model))
    assert [b["stream"] for b in server.chat_requests()] == [True, False]
    assert "stream_options" not in server.chat_requests()[1]
    server.push(Raw(b"", content_type="text/event-stream"))
    assert run(one_prompt(model, "User: hi")) == '{"thought": "I can answer directly.", ' \
        '"toolName": "none", "toolInput": "", "finalAnswer": "You said: hi"}'


def test_a_prompt_that_cannot_fit_is_refused_before_any_request(server):
    model = model_for(server, context_window=300)
    with pytest.raises(QuotaExceededError):
        run(one_prompt(model, "many words " * 200))
    assert server.chat_requests() == []


@pytest.mark.parametrize("backend", ["server", "double"])
def test_a_message_list_session_starts_by_the_prompt_apis_rules(server, backend):
    """The server model and the test double keep sessions as message lists and start
    them alike: a system prompt only first, initial prompts within the window, and
    the session's own copy of them."""
    model = model_for(server, context_window=300) if backend == "server" \
        else FunctionModel(lambda call: "ok", context_window=300)
    prompts = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]

    async def go():
        with pytest.raises(ValueError, match="system prompt must come first"):
            await model.create(initial_prompts=[*prompts[1:], prompts[0]])
        with pytest.raises(QuotaExceededError) as too_long:
            await model.create(initial_prompts=[{"role": "user", "content": "word " * 400}])
        session = await model.create(initial_prompts=prompts)
        prompts[1]["content"] = "changed afterwards"
        return session, too_long.value

    session, too_long = run(go())
    assert too_long.quota == 300 and too_long.requested > 300
    assert session.messages == [{"role": "system", "content": "Be brief."},
                                {"role": "user", "content": "Hi"}]
    assert 0 < session.context_usage < 300 and server.chat_requests() == []


def test_cancelling_a_streaming_prompt_closes_the_connection(server):
    model = model_for(server, context_window=4000, timeouts=Timeouts(read=20, call=30))
    started = asyncio.Event()
    model.on_chunk = lambda chunk: started.set()
    server.push(Reply(content="slow " * 20, hang_after_chunks=3))

    async def go():
        task = asyncio.ensure_future(one_prompt(model))
        await asyncio.wait_for(started.wait(), 5)
        clock = time.perf_counter()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.perf_counter() - clock

    assert run(go()) < 0.5


def test_a_failed_prompt_leaves_the_session_as_it_was(server):
    model = model_for(server, context_window=4000)

    async def go():
        session = await model.create(initial_prompts=[{"role": "system", "content": "x"}])
        before = (list(session.messages), session.context_usage)
        server.push(Fail(400, "bad things"))
        with pytest.raises(Exception):
            await session.prompt("hello")
        return before, (session.messages, session.context_usage)

    before, after = run(go())
    assert before == after


# --------------------------------------------------------------- discovery

@pytest.mark.parametrize("flavor,source,measures", [
    ("vllm", "vLLM", True), ("llama.cpp", "llama.cpp", True), ("ollama", "Ollama", False)])
def test_the_window_comes_from_the_server_when_it_tells(flavor, source, measures):
    with FakeServer(agent_responder, flavor=flavor, context_window=5120) as server:
        model = model_for(server)
        assert model.context_window is None
        assert run(model.availability()) == "available"
        counted = run(model.measure("three little words"))
    assert model.context_window == 5120 and model.window_source.startswith(source)
    assert counted == (3 if measures else None)


def test_without_a_window_from_anywhere_the_default_is_used_and_said(server):
    model = model_for(server)
    run(model.connect())
    assert model.context_window == 4096 and "configure it" in model.window_source
    assert model.facts.models == ("fake-model",)


def test_a_configured_window_wins_over_the_server():
    with FakeServer(agent_responder, flavor="vllm", context_window=5120) as server:
        model = model_for(server, context_window=3000)
        run(model.connect())
    assert model.context_window == 3000 and model.window_source == "configured"


def test_the_agent_turn_with_a_dead_server_is_saved_as_failed_and_the_next_works():
    port = free_port()
    store = InMemoryStore()
    model = OpenAIModel(f"http://127.0.0.1:{port}/v1", "fake-model", timeouts=FAST)
    model.client.sleep = lambda s: asyncio.sleep(0)
    agent = Agent(model=model, store=store, tools=[calculate])
    failed = run(agent.run("What is 2 plus 2?", session_id="s"))
    assert failed.status == "error" and "Nothing is listening" in failed.answer
    with FakeServer(agent_responder, port=port):
        ok = run(agent.run("What is 2 plus 2?", session_id="s"))
    assert ok.status == "answered" and "4" in ok.answer
    archive = run(store.read_archive("s"))
    assert [t.status for t in archive] == ["error", "answered"]
