"""Sentence vectors (py_agent.embedding) in the agent: the real USE-m3 (the `embed`
extra, installed in the test venv), the vectors' storage and search, and what happens
when the embedder is slow, fails, is damaged, changes, or a chat is deleted or private."""

from __future__ import annotations

import asyncio
import math
import shutil

import pytest

from py_agent import Agent, InMemoryStore
from py_agent.embedding import (EmbedderError, EmbedderSlot, VectorBlobError, VectorIndex,
                                cut, dump_vectors, load_vectors, quantize)
from py_agent.embedding.use_m3 import SPACE, UseM3, check_files, load_use_m3, resources
from py_agent.embedding.vectors import search
from py_agent.sqlite_store import SqliteStore
from py_agent.testing import FunctionModel
from tests.unit.support import make_responder, run

SISTER = "My sister Anna is moving to Lisbon next spring for her new job at the hospital."
PARAPHRASE = "where is my sibling relocating to?"


def unit(values: list[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in values))
    return [x / norm for x in values]


class Trigrams:
    """A second embedding space for the model-change tests: hashed character trigrams
    (a real, if weak, embedder of the protocol)."""

    space = "test-trigrams/1"
    dimension = 64
    max_chars = 500

    def __init__(self) -> None:
        self.calls = 0

    async def embed(self, texts):
        self.calls += 1
        out = []
        for text in texts:
            v = [0.0] * self.dimension
            text = f"  {cut(text, self.max_chars).lower()}  "
            for i in range(len(text) - 2):
                v[hash(text[i:i + 3]) % self.dimension] += 1.0
            out.append(unit(v))
        return out


def agent_with(embedder, store=None, **kwargs) -> Agent:
    model = FunctionModel(make_responder())
    return Agent(model, store if store is not None else InMemoryStore(), embedder=embedder,
                 **kwargs)


async def settled(agent: Agent) -> None:
    assert await agent.embedder.wait_ready(60)
    # A query's embedding may take up to 2 s before recall goes on without it: generous
    # for a product, not for a test on a loaded machine asserting what meaning found.
    agent.embedder.query_timeout = 30.0
    await agent.archive_recall.settled(30)
    await agent.archive_recall.vectors.settled(60)


# ------------------------------------------------------------------ vectors


def test_quantized_search_finds_the_nearest_rows_and_honours_what_it_may_read():
    index_a, index_b = VectorIndex(4), VectorIndex(4)
    index_a.add(1, [1, 0, 0, 0])
    index_a.add(2, [0, 1, 0, 0])
    index_b.add(1, [0.9, 0.1, 0, 0])
    found = search([("a", index_a), ("b", index_b)], [1, 0.05, 0, 0], 2)
    assert [(g, k) for _, g, k in found] == [("a", 1), ("b", 1)]
    assert found[0][0] == pytest.approx(1.0, abs=0.01)
    only_b = search([("a", index_a), ("b", index_b)], [1, 0, 0, 0], 3,
                    allow=lambda group, key: group == "b")
    assert [(g, k) for _, g, k in only_b] == [("b", 1)]
    bytes_, bits = quantize([0.5, -0.25, 0, 1])
    assert list(memoryview(bytes_).cast("b")) == [64, -32, 0, 127] and bits == 0b1001


def test_a_shortlist_scores_only_the_rows_nearest_by_sign_bits():
    index = VectorIndex(8)
    for key in range(300):
        index.add(key, [(-1) ** (key >> i & 1) for i in range(8)])
    index.add("target", [1] * 8)
    found = search([("g", index)], [1] * 8, 1, shortlist=5)
    assert found[0][2] in ("target", 0) and found[0][0] == pytest.approx(1.0)


def test_chosen_rows_are_scored_exactly_whatever_their_sign_bits():
    index = VectorIndex(4)
    index.add("near", [1, 0.1, 0, 0])
    index.add("far", [-1, 0.2, 0.1, 0])
    index.add("other", [0, 1, 0, 0])
    q, _ = quantize([1, 0, 0, 0])
    found = index.cosines(q, ["far", "near", "missing"])
    assert set(found) == {"far", "near"}
    assert found == pytest.approx(
        {key: score for key, score in index.scores([1, 0, 0, 0]).items() if key in found})
    assert found["near"] > 0.9 and found["far"] < -0.9


def test_vectors_round_trip_as_bytes_with_their_space_and_refuse_another():
    index = VectorIndex(3)
    index.add(7, [0.1, 0.2, 0.3])
    index.add(9, [-1, 0, 1])
    blob = dump_vectors(index, "space-a")
    again = load_vectors(blob, "space-a")
    assert sorted(again.keys()) == [7, 9] and again.row(9) == index.row(9)
    with pytest.raises(VectorBlobError, match="space-a"):
        load_vectors(blob, "space-b")
    with pytest.raises(VectorBlobError):
        load_vectors(blob[:-2], "space-a")
    with pytest.raises(VectorBlobError):
        load_vectors(b"not vectors", "space-a")


# ------------------------------------------------------------------ the model


def test_use_m3_gives_unit_vectors_that_read_meaning_across_languages():
    model = run(load_use_m3())
    [en, es, other] = run(model.embed(["How many days until Christmas?",
                                       "¿Cuántos días faltan para Navidad?",
                                       "Please water the tomato plants."]))
    assert len(en) == model.dimension == 512 and model.space == SPACE
    assert sum(x * x for x in en) == pytest.approx(1.0, abs=1e-4)
    dot = lambda a, b: sum(x * y for x, y in zip(a, b))  # noqa: E731
    assert dot(en, es) > dot(en, other) + 0.3


def test_a_text_longer_than_the_input_is_cut_not_refused():
    model = run(load_use_m3())
    long = "The garden needs water. " * 5000
    [vector] = run(model.embed([long]))
    [start] = run(model.embed([cut(long, model.max_chars)]))
    assert vector == start and len(cut(long, model.max_chars)) <= model.max_chars


def test_damaged_weights_are_refused_with_a_clear_error(tmp_path):
    for name in ("weights.npz", "sp.model"):
        shutil.copy(resources() / name, tmp_path / name)
    check_files(tmp_path)  # the package's own files pass
    data = bytearray((tmp_path / "sp.model").read_bytes())
    data[1000] ^= 0xFF
    (tmp_path / "sp.model").write_bytes(bytes(data))
    with pytest.raises(EmbedderError, match="sp.model is damaged"):
        check_files(tmp_path)
    (tmp_path / "weights.npz").unlink()
    with pytest.raises(EmbedderError, match="weights.npz cannot be read"):
        check_files(tmp_path)


# ------------------------------------------------------------------ in the agent


def test_the_default_agent_uses_the_embedder_where_the_extra_is_installed(monkeypatch):
    monkeypatch.delenv("PY_AGENT_EMBEDDER", raising=False)
    agent = Agent(FunctionModel(make_responder()))
    assert agent.embedder.status.state == "loading"   # nothing loaded yet: lazily, in the background
    monkeypatch.setenv("PY_AGENT_EMBEDDER", "off")
    assert Agent(FunctionModel(make_responder())).embedder.status.state == "off"


def test_the_first_answer_never_waits_for_the_embedder_and_the_trace_says_so():
    release = asyncio.Event()
    started = []

    async def slow_loader():
        started.append(True)
        await release.wait()
        return await load_use_m3()

    async def go():
        events = []
        agent = agent_with(slow_loader, on_event=events.append)
        result = await asyncio.wait_for(agent.run("what's 70 kg in pounds?", session_id="a"), 10)
        offers = [e.data for e in events if e.type == "tools_retrieved"]
        release.set()
        await settled(agent)
        await agent.turns.tool_choice.settled(60)
        await agent.run("¿cuántos kilos son 150 libras?", session_id="a")
        later = [e.data for e in events if e.type == "tools_retrieved"][-1]
        await agent.close()
        return result, offers[0], later

    result, first, later = run(go())
    assert started and result.answer                       # answered while still loading
    assert first["dense"] == "loading"
    assert later["dense"] == "used"


def test_a_failed_load_is_a_note_in_the_status_never_a_failed_turn():
    async def broken():
        raise EmbedderError("weights.npz is damaged or of another version")

    async def go():
        events = []
        agent = agent_with(broken, on_event=events.append)
        first = await agent.run("hello, what's 2+2?", session_id="a")
        await agent.embedder.wait_ready(5)
        second = await agent.run("and 3+3?", session_id="a")
        hits = await agent.recall("2+2")
        offers = [e.data["dense"] for e in events if e.type == "tools_retrieved"]
        await agent.close()
        return agent.embedder.status, first, second, hits, offers

    status, first, second, hits, offers = run(go())
    assert status.state == "failed" and "damaged" in status.note
    assert first.answer and second.answer and hits
    assert offers[-1] == "failed"


def test_a_paraphrase_brings_back_the_turn_of_another_chat_that_shares_no_word():
    async def go(embedder):
        agent = agent_with(embedder)
        await agent.run(SISTER, session_id="family")
        await agent.run("Can you suggest a pasta recipe with spinach?", session_id="food")
        await agent.run("What's the capital of Australia?", session_id="quiz")
        if embedder is not None:
            await settled(agent)
        hits = await agent.recall(PARAPHRASE)
        await agent.close()
        return hits

    lexical = run(go(None))
    dense = run(go(load_use_m3))
    assert not any(h.session_id == "family" for h in lexical)
    assert dense and dense[0].session_id == "family" and "meaning" in dense[0].why.signals()


def test_a_turn_found_by_its_words_has_its_meaning_counted_beyond_the_nearest(monkeypatch):
    from py_agent.recall import archive
    monkeypatch.setattr(archive, "DENSE_CANDIDATES", 1)  # only the nearest turn is given

    async def go():
        agent = agent_with(load_use_m3)
        await agent.run("We booked the train to Porto for the 12th.", session_id="trip")
        await agent.run("The Porto train leaves at 9 from Santa Apolonia.", session_id="trip")
        await agent.run("Can you suggest a pasta recipe with spinach?", session_id="food")
        await settled(agent)
        hits = await agent.recall("when does the Porto train leave?")
        await agent.close()
        return hits

    hits = run(go())
    assert len([h for h in hits if h.session_id == "trip"]) == 2
    # One of the two was the nearest by meaning; the other had its cosine looked up.
    assert all(h.why.meaning > 0 for h in hits if h.session_id == "trip")


@pytest.fixture(params=["memory", "sqlite"])
def store(request, tmp_path):
    return InMemoryStore() if request.param == "memory" else SqliteStore(tmp_path / "a.db")


def test_deleting_a_chat_deletes_its_vectors_and_a_private_chat_is_never_searched(store):
    async def go():
        agent = agent_with(load_use_m3, store)
        await agent.run(SISTER, session_id="family")
        await agent.run("Remind me that my brother's flat is in Porto.", session_id="secret")
        await agent.run("Hello there", session_id="other")
        await settled(agent)
        await agent.save_recall()
        saved = set(await store.load_vectors())
        shared_hits = await agent.recall("where does my sibling reside?")
        await agent.set_private("secret")
        private_hits = await agent.recall("where does my sibling reside?")
        in_it = await agent.recall("where does my sibling reside?", session_id="secret")
        await agent.delete_session("family")
        after = set(await store.load_vectors())
        hits = await agent.recall(PARAPHRASE)
        await agent.close()
        return saved, shared_hits, private_hits, in_it, after, hits

    saved, shared_hits, private_hits, in_it, after, hits = run(go())
    assert saved == {"family", "secret", "other"}
    assert any(h.session_id == "secret" and "meaning" in h.why.signals() for h in shared_hits)
    assert private_hits and not any(h.session_id == "secret" for h in private_hits)
    assert in_it and in_it[0].session_id == "secret"
    assert after == {"secret", "other"}
    assert not any(h.session_id == "family" for h in hits)


def test_a_change_of_model_embeds_every_turn_again_in_the_new_space(store):
    async def go():
        first = agent_with(load_use_m3, store)
        await first.run(SISTER, session_id="family")
        await first.run("Hello there", session_id="other")
        await settled(first)
        await first.close()
        before = {s: load_vectors(b, SPACE).keys() for s, b in (await store.load_vectors()).items()}
        trigrams = Trigrams()
        second = agent_with(trigrams, store)
        await second.archive_recall.settled(30)
        second.archive_recall.vectors.wake()
        await second.archive_recall.vectors.settled(30)
        await second.close()
        blobs = await store.load_vectors()
        return before, blobs, trigrams.calls

    before, blobs, calls = run(go())
    assert before == {"family": [1], "other": [1]}
    assert calls >= 1
    for blob in blobs.values():
        assert load_vectors(blob, Trigrams.space).keys() == [1]
        with pytest.raises(VectorBlobError):
            load_vectors(blob, SPACE)


def test_old_archives_are_embedded_in_the_background_with_progress_and_resumed(tmp_path):
    store = SqliteStore(tmp_path / "a.db")

    async def go():
        plain = agent_with(None, store)
        for i in range(20):
            await plain.run(f"Note {i}: the plumber comes on day {i} of the month.",
                            session_id="old")
        await plain.close()
        slot = EmbedderSlot(load_use_m3)
        progress = []
        slot.on_change(lambda status: progress.append((status.task, status.progress)))
        agent = agent_with(slot, store)
        agent.archive_recall.vectors.save_every = 8
        await agent.recall("plumber")     # starts the index (and so the embedder)
        await settled(agent)
        count = agent.archive_recall.vectors.count()
        await agent.close()
        return count, progress, await store.load_vectors()

    count, progress, blobs = run(go())
    assert count == 20
    shares = [p for task, p in progress if task == "embedding the archive"]
    assert shares and shares[-1] == 1.0 and min(shares) < 1.0
    assert sorted(load_vectors(blobs["old"], SPACE).keys()) == list(range(1, 21))


def test_use_m3_is_shared_and_imported_lazily():
    import subprocess
    import sys
    code = ("import sys, py_agent; "
            "print('usem3' in sys.modules, 'numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.split() == ["False", "False"], out.stderr
    assert run(load_use_m3()) is run(load_use_m3()) and isinstance(run(load_use_m3()), UseM3)
