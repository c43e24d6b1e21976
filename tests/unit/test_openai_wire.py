"""The OpenAI-compatible wire format, parsed without a network: SSE framing, replies,
stream chunks, error bodies, URLs, and the servers' own ways of telling their window."""

from __future__ import annotations

import asyncio
import json

import pytest

from py_agent.openai_compat import normalize_base_url
from py_agent.openai_compat.discovery import (OLLAMA_ASSUMED_WINDOW, lm_studio_window,
                                              llama_cpp_window, model_ids, ollama_window,
                                              token_count, vllm_window)
from py_agent.openai_compat.errors import (AuthenticationError, ContextLengthError,
                                           ModelNotFoundError, RateLimitError, ServerFailureError,
                                           UnsupportedFeatureError, error_detail, error_for_status)
from py_agent.openai_compat.sse import new_parser, sse_data
from py_agent.openai_compat.wire import (MalformedReplyError, StreamAccumulator, chat_body,
                                         parse_completion)
from tests.unit.support import run


async def _chunks(parts):
    for part in parts:
        yield part


def test_events_survive_any_split_line_ends_comments_and_multiline_data():
    stream = ': keep-alive\r\ndata: {"a": "caf\xe9 \u65e5\u672c"}\r\n\r\ndata: line one\ndata: line two\n\n' \
             'event: ping\ndata: x\r\rdata: [DONE]\n\n'
    raw = stream.encode()
    whole = run(_collect(sse_data(_chunks([raw]))))
    for size in (1, 2, 3, 7):
        pieces = [raw[i:i + size] for i in range(0, len(raw), size)]
        assert run(_collect(sse_data(_chunks(pieces)))) == whole
    assert whole == ['{"a": "café 日本"}', "line one\nline two", "x", "[DONE]"]


async def _collect(agen):
    return [item async for item in agen]


def test_two_streams_read_at_once_do_not_mix_their_characters():
    """assel 1.0 shares one UTF-8 decoder between parsers; new_parser gives each its own."""
    first, second = new_parser(), new_parser()
    assert first.receive_bytes("data: caf\xe9"[:-1].encode() + b"\xc3") == []
    assert [e.data for e in second.receive_bytes(b"data: other\n\n")] == ["other"]
    assert [e.data for e in first.receive_bytes(b"\xa9\n\n")] == ["café"]


def test_stream_chunks_build_content_tool_calls_and_usage():
    acc = StreamAccumulator(url="u", model="m")
    feed = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]},
        {"choices": [{"index": 0, "delta": {"content": "Let me "}}]},
        {"choices": [{"index": 0, "delta": {"content": "check."}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "c1", "type": "function",
             "function": {"name": "calculate", "arguments": ""}}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 1, "id": "c2", "function": {"name": "convert_units", "arguments": "{}"}}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": '{"expression": '}}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": '"2*3"}'}}]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {"choices": [], "usage": {"prompt_tokens": 40, "completion_tokens": 9}},
    ]
    texts = [acc.feed(json.dumps(chunk)) for chunk in feed]
    assert "".join(texts) == "Let me check." and not acc.done
    acc.feed("[DONE]")
    reply = acc.reply
    assert acc.done and acc.complete and reply.finish_reason == "tool_calls"
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [
        ("c1", "calculate", '{"expression": "2*3"}'), ("c2", "convert_units", "{}")]
    assert (reply.prompt_tokens, reply.completion_tokens) == (40, 9)
    assert reply.text == "Let me check."  # content wins over a tool call


def test_a_tool_call_without_content_reads_as_a_step():
    body = {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function",
            "function": {"name": "calculate", "arguments": "not json"}}]}}]}
    reply = parse_completion(json.dumps(body).encode(), url="u", model="m")
    assert json.loads(reply.text) == {"thought": "", "toolName": "calculate",
                                      "toolInput": "not json", "finalAnswer": ""}


def test_content_may_come_as_a_list_of_text_parts():
    body = {"choices": [{"message": {"content": [{"type": "text", "text": "a"},
                                                 {"type": "text", "text": "b"}]}}]}
    assert parse_completion(json.dumps(body).encode(), url="u", model="m").text == "ab"


@pytest.mark.parametrize("body,error", [
    (b'{"error": {"message": "boom", "type": "server_error", "code": 500}}', ServerFailureError),
    (b'{"error": {"message": "This model\'s maximum context length is 2048 tokens",'
     b' "code": 400}}', ContextLengthError),
    (b'{"id": "x"}', MalformedReplyError),
    (b'{"choices": [{"index": 0}]}', MalformedReplyError),
    (b'{"choices": "nope"}', MalformedReplyError),
    (b'[1, 2]', MalformedReplyError),
])
def test_bad_or_error_bodies_with_status_200_are_typed(body, error):
    with pytest.raises(error):
        parse_completion(body, url="u", model="m")
    acc = StreamAccumulator(url="u", model="m")
    if b'"id"' in body or b'"index"' in body:
        assert acc.feed(body.decode()) == ""  # a chunk with no choice or delta is normal
    else:
        with pytest.raises(error):
            acc.feed(body.decode())


@pytest.mark.parametrize("body,expected", [
    (b'{"error": {"message": "Incorrect API key", "type": "invalid_request_error", '
     b'"code": "invalid_api_key"}}', ("Incorrect API key", "invalid_api_key")),
    (b'{"error": "model \\"llama9\\" not found, try pulling it first"}',  # Ollama
     ('model "llama9" not found, try pulling it first', None)),
    (b'{"detail": "Not Found"}', ("Not Found", None)),  # FastAPI (llama-cpp-python)
    (b'{"object": "error", "message": "The model `x` does not exist.", "type": '
     b'"NotFoundError", "code": 404}', ("The model `x` does not exist.", "404")),  # vLLM
    (b"upstream connect error", ("upstream connect error", None)),
])
def test_error_details_are_read_from_every_servers_shape(body, expected):
    assert error_detail(body) == expected


def test_statuses_become_errors_that_say_what_to_do():
    auth = error_for_status(401, b"{}", {}, url="http://h/v1", model="m")
    assert isinstance(auth, AuthenticationError) and "PY_AGENT_API_KEY" in str(auth)
    missing = error_for_status(404, b'{"error": "model \\"m\\" not found"}', {},
                               url="http://h/v1", model="m")
    assert isinstance(missing, ModelNotFoundError) and "http://h/v1/models" in str(missing)
    limited = error_for_status(429, b"{}", {"retry-after": "7"}, url="u", model="m")
    assert isinstance(limited, RateLimitError) and limited.retry_after == 7
    assert error_for_status(429, b"{}", {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"},
                            url="u", model="m").retry_after is None
    refused = error_for_status(400, b'{"error": {"message": "stream_options is not permitted"}}',
                               {}, url="u", model="m")
    assert isinstance(refused, UnsupportedFeatureError)
    too_long = error_for_status(400, b'{"error": {"message": "the request exceeds the available '
                                     b'context size"}}', {}, url="u", model="m")  # llama.cpp
    assert isinstance(too_long, ContextLengthError)


def test_a_request_body_carries_schema_usage_and_options():
    body = chat_body("m", [{"role": "user", "content": "hi"}], stream=True,
                     schema={"type": "object"}, schema_name="step fact!", max_tokens=50,
                     include_usage=True, options={"temperature": 0.2, "model": "ignored"})
    assert body == {"model": "m", "messages": [{"role": "user", "content": "hi"}],
                    "stream": True, "max_tokens": 50,
                    "response_format": {"type": "json_schema", "json_schema": {
                        "name": "step_fact_", "schema": {"type": "object"}}},
                    "stream_options": {"include_usage": True}, "temperature": 0.2}


@pytest.mark.parametrize("given,base,root", [
    ("http://localhost:11434/v1", "http://localhost:11434/v1", "http://localhost:11434"),
    ("localhost:8080", "http://localhost:8080/v1", "http://localhost:8080"),
    ("http://localhost:8080/", "http://localhost:8080/v1", "http://localhost:8080"),
    ("https://h.example/v1/chat/completions", "https://h.example/v1", "https://h.example"),
    ("http://proxy/openai/v1/", "http://proxy/openai/v1", "http://proxy/openai"),
    ("http://[::1]:8000/v1/models", "http://[::1]:8000/v1", "http://[::1]:8000"),
])
def test_base_urls_are_normalized(given, base, root):
    assert normalize_base_url(given) == (base, root)


def test_a_base_url_must_be_http():
    with pytest.raises(ValueError):
        normalize_base_url("ftp://host/v1")


# ----------------------------------------------------- window discovery shapes

def test_vllm_models_listing():
    data = {"object": "list", "data": [
        {"id": "google/gemma-3-4b-it", "object": "model", "root": "google/gemma-3-4b-it",
         "max_model_len": 16384},
        {"id": "lora-a", "object": "model", "root": "base", "max_model_len": 8192}]}
    assert vllm_window(data, "google/gemma-3-4b-it") == 16384
    assert vllm_window(data, "lora-a") == 8192
    assert vllm_window(data, "unknown") is None  # two models: do not guess
    assert vllm_window({"data": [{"id": "only", "max_model_len": 4096}]}, "alias") == 4096
    assert vllm_window({"data": [{"id": "x", "max_model_len": True}]}, "x") is None
    assert model_ids(data) == ("google/gemma-3-4b-it", "lora-a")


def test_llama_cpp_props():
    assert llama_cpp_window({"default_generation_settings": {"n_ctx": 8192, "params": {}},
                             "total_slots": 4}) == 8192
    assert llama_cpp_window({"n_ctx": 2048}) == 2048  # older servers
    assert llama_cpp_window({"detail": "Not Found"}) is None


def test_ollama_show_and_ps():
    show = {"parameters": 'stop "<end_of_turn>"\nnum_ctx 12288\ntemperature 1',
            "model_info": {"gemma3.context_length": 131072, "general.architecture": "gemma3"}}
    assert ollama_window(show, {"models": []}, "gemma3:4b") == 12288
    plain = {"parameters": 'stop "<end_of_turn>"', "model_info": {"gemma3.context_length": 131072}}
    assert ollama_window(plain, None, "gemma3") == OLLAMA_ASSUMED_WINDOW
    small = {"model_info": {"llama.context_length": 2048}}
    assert ollama_window(small, None, "tiny") == 2048
    running = {"models": [{"name": "gemma3:latest", "model": "gemma3:latest",
                           "context_length": 32768}]}
    assert ollama_window(plain, running, "gemma3") == 32768
    assert ollama_window({"error": "not found"}, None, "x") is None


def test_lm_studio_and_tokenize_shapes():
    assert lm_studio_window({"id": "m", "max_context_length": 32768,
                             "loaded_context_length": 4096}) == 4096
    assert token_count("llama.cpp", {"tokens": [1, 2, 3]}) == 3
    assert token_count("vllm", {"count": 5, "max_model_len": 1, "tokens": [1]}) == 5
    assert token_count("vllm", {"detail": "x"}) is None


def test_the_backend_imports_where_ssl_and_sqlite3_are_missing_as_in_pyodide():
    import subprocess
    import sys
    code = ("import sys; sys.modules['ssl'] = None; sys.modules['sqlite3'] = None\n"
            "import py_agent.openai_compat as m\n"
            "model = m.OpenAIModel('http://h:1/v1', 'x', transport=object())\n"
            "assert 'py_agent.openai_compat.stdlib_transport' not in sys.modules\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_the_step_schema_goes_with_complete_branches_so_a_grammar_keeps_every_field():
    # llama.cpp's converter reads only the branches of an anyOf and drops what is beside
    # it: sent as the agent writes it, the step's required fields would not be enforced.
    import jsonschema

    from py_agent import tool
    from py_agent.prompting import step_schema
    from py_agent.openai_compat.wire import branches_complete

    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    schema = step_schema([add])
    sent = chat_body("m", [], stream=False, schema=schema, schema_name="step", max_tokens=None,
                     include_usage=False)["response_format"]["json_schema"]["schema"]
    assert sent == branches_complete(schema) and set(sent) == {"anyOf"}
    for branch in sent["anyOf"]:
        assert branch["type"] == "object" and branch["additionalProperties"] is False
        assert set(branch["required"]) == {"thought", "toolName", "toolInput", "finalAnswer"}
    step = {"thought": "", "toolName": "add", "toolInput": {"a": 1, "b": 2}, "finalAnswer": ""}
    instances = [step, {**step, "toolInput": {"a": 1}}, {**step, "toolName": "none"},
                 {**step, "toolName": "none", "toolInput": ""}, {"toolName": "add"},
                 {**step, "extra": 1}, {**step, "toolName": "mul"}]
    for instance in instances:  # the same constraint, in the other form
        assert jsonschema.Draft202012Validator(schema).is_valid(instance) == \
            jsonschema.Draft202012Validator(sent).is_valid(instance), instance
