"""Sentence vectors from an OpenAI-compatible server (`POST /v1/embeddings`), chosen with
the server's model: real HTTP to tests/fake_openai_server.py, which answers in the wire
format the servers use; and a server's embedder in the agent's recall."""

from __future__ import annotations

import pytest

from py_agent import Agent, InMemoryStore
from py_agent.embedding import EmbedderError
from py_agent.openai_compat.client import ChatClient
from py_agent.openai_compat.embeddings import OpenAIEmbedder
from py_agent.openai_compat.stdlib_transport import StdlibTransport
from py_agent.testing import FunctionModel
from tests.fake_openai_server import FakeServer
from tests.unit.support import make_responder, run


@pytest.fixture
def server():
    with FakeServer(embedding_models={"nomic-embed-text": 48}) as fake:
        yield fake


def embedder_for(server, model="nomic-embed-text") -> OpenAIEmbedder:
    return OpenAIEmbedder(ChatClient(server.url, "chat-model", StdlibTransport()), model)


def test_vectors_come_back_unit_length_in_order_with_the_servers_space(server):
    embedder = embedder_for(server)
    long = "tea " * 5000
    vectors = run(embedder.embed(["green tea", "black coffee", long]))
    assert len(vectors) == 3 and embedder.dimension == 48
    assert all(abs(sum(x * x for x in v) - 1) < 1e-9 for v in vectors)
    assert vectors[0] == run(embedder.embed(["green tea"]))[0]
    sent = [r["body"] for r in server.requests if r["path"] == "/v1/embeddings"]
    assert sent[0]["model"] == "nomic-embed-text" and len(sent[0]["input"][2]) <= 2000
    assert embedder.space.endswith("#nomic-embed-text") and server.url in embedder.space


def test_an_unknown_model_is_a_clear_embedder_error(server):
    with pytest.raises(EmbedderError, match="no-such-model"):
        run(embedder_for(server, "no-such-model").embed(["x"]))


def test_a_servers_embedder_serves_recall_and_a_failure_never_fails_a_turn(server):
    async def go():
        embedder = embedder_for(server)
        agent = Agent(FunctionModel(make_responder()), InMemoryStore(), embedder=embedder)
        await agent.run("The spare key is under the blue flowerpot.", session_id="a")
        await agent.archive_recall.settled(10)
        await agent.archive_recall.vectors.settled(10)
        hits = await agent.recall("spare keys flowerpots")
        server.embedding_models.clear()            # the server stops serving the model
        answered = await agent.run("and the garage code?", session_id="a")
        status = agent.embedder.status
        await agent.close()
        return hits, answered, status

    hits, answered, status = run(go())
    assert hits and "meaning" in hits[0].why.signals()
    assert answered.answer and status.state == "failed" and "nomic-embed-text" in status.note
