"""Attachments in Python: sniffing, caps, sizes, the turn that sends them, what memory
keeps of them, the archive's blobs (kept, capped, deleted), export and import."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from py_agent import Agent, InMemoryStore
from py_agent.attachments import (MAX_PER_MESSAGE, Attachment, AttachmentError,
                                  AttachmentRecord, image_size, sniff, wav_seconds)
from py_agent.memory_view import render_turn
from py_agent.model import InputNotSupportedError, Purpose
from py_agent.recall.analysis import display_text
from py_agent.sqlite_store import SqliteStore
from py_agent.testing import FunctionModel, PromptCall, step_json
from py_agent.transfer import parse_session
from py_agent.turn import attached
from tests.unit import media_samples as samples
from tests.unit.support import run


# ------------------------------------------------------------------ sniffing

@pytest.mark.parametrize("data,mime", [
    (samples.png(), "image/png"), (samples.jpeg_header(), "image/jpeg"),
    (samples.gif(), "image/gif"), (samples.WEBP, "image/webp"), (samples.HEIC, "image/heic"),
    (samples.AVIF, "image/avif"), (samples.SVG, "image/svg+xml"), (samples.wav(), "audio/wav"),
    (samples.MP3, "audio/mpeg"), (samples.OGG, "audio/ogg"), (samples.PDF, "application/pdf"),
    (samples.TEXT, "text/plain"), (b"\x00\x01\x02\x03garbage", "application/octet-stream"),
])
def test_the_type_comes_from_the_bytes(data, mime):
    assert sniff(data).mime == mime


def test_a_pdf_named_like_a_photo_is_refused_as_not_media(tmp_path: Path):
    fake = tmp_path / "receipt.jpg"
    fake.write_bytes(samples.PDF)
    with pytest.raises(AttachmentError) as caught:
        Attachment(path=str(fake), type="image/jpeg").loaded()
    assert caught.value.reason == "not-media"
    assert "receipt.jpg is not an image or a sound (it is a PDF document)" in str(caught.value)


@pytest.mark.parametrize("data,mime,size", [
    (samples.png(7, 5), "image/png", (7, 5)),
    (samples.jpeg_header(1200, 900), "image/jpeg", (1200, 900)),
    (samples.gif(3, 9), "image/gif", (3, 9)),
    (samples.WEBP, "image/webp", (100, 50)),
])
def test_an_images_size_is_read_from_its_header(data, mime, size):
    assert image_size(data, mime) == size
    loaded = Attachment(content=data, name="x").loaded()
    assert (loaded.width, loaded.height) == size and loaded.type == mime


def test_a_truncated_header_gives_no_size_rather_than_an_error():
    assert image_size(samples.png()[:20], "image/png") is None
    assert image_size(samples.jpeg_header()[:12], "image/jpeg") is None


def test_a_wav_length_is_read_and_a_long_one_refused():
    assert wav_seconds(samples.wav(0.5)) == pytest.approx(0.5)
    with pytest.raises(AttachmentError) as caught:
        Attachment(content=samples.wav(121, rate=8000), name="talk.wav").loaded()
    assert caught.value.reason == "too-long" and "at most 120 s" in str(caught.value)


# ------------------------------------------------------------------ caps

def test_a_file_over_the_cap_is_refused_before_it_is_read(tmp_path: Path, monkeypatch):
    big = tmp_path / "huge.png"
    big.write_bytes(samples.png() + b"\x00" * 5000)
    opened = []
    monkeypatch.setattr("builtins.open", lambda *a, **k: opened.append(a) or 1 / 0)
    with pytest.raises(AttachmentError) as caught:
        Attachment(path=str(big), max_bytes=1000).loaded()
    assert caught.value.reason == "too-large" and opened == []
    assert "huge.png is 5 kB; attachments may be at most 1000 bytes" in str(caught.value)


def test_an_empty_or_missing_file_says_so(tmp_path: Path):
    empty = tmp_path / "empty.png"
    empty.write_bytes(b"")
    with pytest.raises(AttachmentError, match="empty.png is empty"):
        Attachment(path=str(empty)).loaded()
    with pytest.raises(AttachmentError) as caught:
        Attachment(path=str(tmp_path / "gone.png")).loaded()
    assert caught.value.reason == "unreadable"


def test_exactly_one_source_is_needed():
    with pytest.raises(ValueError):
        Attachment()
    with pytest.raises(ValueError):
        Attachment(path="a.png", content=b"x")


# ------------------------------------------------------------------ the turn

def answering(answer: str = "A red square.", description: str = "a small red square"):
    """A responder for a model that sees: steps answer; the describe call describes."""
    def reply(call: PromptCall) -> str:
        if call.purpose is Purpose.DESCRIBE:
            listed = [line for line in call.input.splitlines() if line[:1].isdigit()]
            return json.dumps({"descriptions": [description] * len(listed)})
        return step_json(answer=answer)
    return reply


def test_an_image_reaches_the_model_with_its_turn_only_and_memory_keeps_text():
    model = FunctionModel(answering(), accepts=("image",))
    store = InMemoryStore()
    agent = Agent(model=model, store=store)
    image = Attachment(content=samples.png(8, 6), name="square.png")

    async def go():
        first = await agent.run("What is in this picture?", "s", attachments=[image])
        second = await agent.run("And what colour was it?", "s")
        return first, second, await agent.transcript("s"), await agent.memory_state("s")

    first, second, transcript, memory = run(go())
    assert first.status == "answered" and first.answer == "A red square."
    sent = [c for c in model.calls if c.media]
    assert len(sent) == 1   # the step's prompt; nothing else carries the bytes
    picture = sent[0].media[0]
    assert (picture.type, picture.width, picture.height) == ("image/png", 8, 6)
    assert "Attached to this message (shown after it): square.png" in sent[0].input
    # described on the turn's own session, which has seen it (no bytes sent again)
    described = [c for c in model.calls if c.purpose is Purpose.DESCRIBE]
    assert [c.session_id for c in described] == [sent[0].session_id]
    # the second turn: no bytes, only text about the picture
    second_calls = [c for c in model.calls if c.seq > described[0].seq]
    assert second_calls and all(not c.media for c in second_calls)
    assert any("[picture square.png from turn 1, 8×6: a small red square]" in
               (c.input + "".join(m["content"] for m in c.messages)) for c in second_calls)
    record = transcript[0].attachments[0]
    assert record.kept and record.description == "a small red square"
    assert "square.png" in render_turn(transcript[0])
    assert "a small red square" in display_text(transcript[0])   # recall reads it
    blob = run(store.get_blob("s", record.id))
    assert blob is not None and blob[0] == samples.png(8, 6)
    assert memory.recent_turns[0].attachments[0].description == "a small red square"


def test_a_model_that_cannot_see_says_so_and_the_turn_is_kept():
    model = FunctionModel(lambda call: step_json(answer="ok"))   # text only
    agent = Agent(model=model)
    image = Attachment(content=samples.png(), name="chart.png")

    async def go():
        result = await agent.run("Which bar is tallest?", "s", attachments=[image])
        return result, await agent.transcript("s")

    result, transcript = run(go())
    assert result.status == "error"
    assert "FunctionModel takes no image input" in result.answer
    assert "Your message and its attachments are kept" in result.answer
    assert not any(c.media for c in model.calls)
    assert transcript[0].user == "Which bar is tallest?"
    assert transcript[0].attachments[0].name == "chart.png"
    assert transcript[0].attachments[0].kept


def test_a_session_not_created_for_images_refuses_them_as_the_prompt_api_does():
    model = FunctionModel(lambda call: "x", accepts=("image",))

    async def go():
        session = await model.create(initial_prompts=[])
        await session.prompt([{"type": "text", "value": "hi"},
                              {"type": "image", "value": Attachment(content=samples.png()).loaded()}])

    with pytest.raises(InputNotSupportedError):
        run(go())


def test_too_many_attachments_are_refused_before_anything_is_archived():
    agent = Agent(model=FunctionModel(answering(), accepts=("image",)))
    many = [Attachment(content=samples.png(), name=f"{i}.png") for i in range(MAX_PER_MESSAGE + 6)]
    with pytest.raises(AttachmentError) as caught:
        run(agent.run("compare these", "s", attachments=many))
    assert caught.value.reason == "too-many"
    assert run(agent.list_sessions()) == []


def test_a_description_the_model_cannot_give_falls_back_to_what_is_known():
    model = FunctionModel(lambda call: step_json(answer="Seen."), accepts=("image",))
    agent = Agent(model=model)
    run(agent.run("look", "s", attachments=[Attachment(content=samples.jpeg_header(40, 30),
                                                         name="p.jpg")]))
    record = run(agent.transcript("s"))[0].attachments[0]
    assert record.description.startswith("an image (JPEG, 40×30")


# ------------------------------------------------------------------ the archive's blobs

@pytest.fixture(params=["memory", "sqlite"])
def store(request, tmp_path):
    return InMemoryStore() if request.param == "memory" else SqliteStore(tmp_path / "s.db")


def test_blobs_are_kept_and_deleted_with_their_session(store):
    async def go():
        await store.put_blob("a", "x1", b"one", {"type": "image/png"})
        await store.put_blob("b", "x2", b"two", {"type": "audio/wav"})
        kept = await store.get_blob("a", "x1"), await store.blob_sizes("a")
        await store.delete_session("a")
        return kept, await store.get_blob("a", "x1"), await store.get_blob("b", "x2")

    (found, sizes), gone, other = run(go())
    assert found == (b"one", {"type": "image/png"}) and sizes == {"x1": 3}
    assert gone is None and other == (b"two", {"type": "audio/wav"})


def test_attachments_over_the_sessions_cap_are_named_as_not_kept():
    store = InMemoryStore()
    pictures = [Attachment(content=samples.png(20, 20), name=f"{i}.png").loaded()
                for i in range(2)]
    records = [AttachmentRecord.of(p) for p in pictures]
    run(attached.keep(store, "s", pictures, records, cap=len(pictures[0].content) + 10))
    assert [r.kept for r in records] == [True, False]
    assert records[1].note.startswith("not kept: this chat's attachments would take more")


def test_a_failed_blob_write_costs_only_the_archived_copy():
    from py_agent.store import StorageError
    store = InMemoryStore()
    store.fail_next = StorageError("disk full", kind="quota")
    agent = Agent(model=FunctionModel(answering(), accepts=("image",)), store=store)
    result = run(agent.run("look", "s", attachments=[Attachment(content=samples.png())]))
    assert result.status == "answered"
    record = run(agent.transcript("s"))[0].attachments[0]
    assert not record.kept and "disk full" in record.note


def test_sqlite_migrates_an_older_file_and_keeps_blobs(tmp_path):
    import sqlite3
    path = tmp_path / "old.db"
    SqliteStore(path).close()
    db = sqlite3.connect(path)
    db.execute("DROP TABLE blobs")
    db.execute("PRAGMA user_version = 3")
    db.commit()
    db.close()
    store = SqliteStore(path)
    run(store.put_blob("s", "b", b"bytes", {}))
    assert run(store.get_blob("s", "b")) == (b"bytes", {})


# ------------------------------------------------------------------ export and import

def _session_with_picture():
    agent = Agent(model=FunctionModel(answering(), accepts=("image",)))
    run(agent.run("What is this?", "s", attachments=[Attachment(content=samples.png(5, 5),
                                                                  name="dot.png")]))
    return agent


def test_an_export_carries_the_attachments_and_an_import_keeps_them():
    agent = _session_with_picture()
    text = run(agent.export_session("s"))
    lines = [json.loads(line) for line in text.splitlines()]
    assert lines[0]["format"] == "py-agent-session/2" and lines[0]["attachments"] == 1
    line = next(x for x in lines if x["type"] == "attachment")
    assert (line["name"], line["mime"], line["width"]) == ("dot.png", "image/png", 5)
    new_id = run(agent.import_session(text, "copy"))
    record = run(agent.transcript(new_id))[0].attachments[0]
    assert record.kept
    assert run(agent.attachment(new_id, record.id)).content == samples.png(5, 5)


def test_an_export_names_attachments_left_out_over_its_cap():
    agent = _session_with_picture()
    bundle = run(agent.sessions.export("s", attachment_cap=10))
    assert bundle.attachments[0].data is None
    assert "at most 0 MB" in bundle.attachments[0].left_out
    parsed = parse_session(bundle.to_jsonl())
    record = parsed.turns[0].attachments[0]
    assert not record.kept and record.note.startswith("left out of the export: the export")
    imported = run(agent.import_bundle(parsed, "other"))
    assert run(agent.attachment(imported, record.id)) is None


def test_a_version_1_file_still_imports():
    agent = _session_with_picture()
    lines = run(agent.export_session("s")).splitlines()
    header = json.loads(lines[0])
    header["format"] = "py-agent-session/1"
    del header["attachments"]
    old = "\n".join([json.dumps(header), *(line for line in lines[1:]
                                           if json.loads(line)["type"] != "attachment")])
    bundle = parse_session(old)
    assert bundle.attachments == [] and bundle.turns[0].user == "What is this?"
    assert not bundle.turns[0].attachments[0].kept


# ------------------------------------------------------------------ tools that see

def _screenshot_tool():
    import base64

    from py_agent.tools import OriginKind, ToolOrigin, Trust
    from py_agent.tools.remote import remote_tool

    async def call(name, arguments):
        return {"content": [{"type": "text", "text": "The dialog on screen:"},
                            {"type": "image", "mimeType": "image/png",
                             "data": base64.b64encode(samples.png(32, 24)).decode()}]}

    origin = ToolOrigin(kind=OriginKind.MCP, trust=Trust.UNTRUSTED, source="mcp:shots",
                        server="shots")
    return remote_tool("take_screenshot", "Take a screenshot of the screen.",
                       {"type": "object", "properties": {}}, call, origin=origin,
                       annotations={"readOnlyHint": True}, trusted=True)


def _tool_then_answer(call: PromptCall) -> str:
    if call.purpose is Purpose.DESCRIBE:
        return json.dumps({"descriptions": ["x"]})
    if "Observation from take_screenshot" in call.input:
        return step_json(answer="It is an error dialog.")
    return step_json(tool="take_screenshot", tool_input={})


def test_a_tools_picture_reaches_a_model_that_sees_inside_the_data_marks():
    model = FunctionModel(_tool_then_answer, accepts=("image",))
    agent = Agent(model=model, tools=[_screenshot_tool()])
    result = run(agent.run("take a screenshot of the screen and tell me what it shows", "s"))
    assert result.status == "answered" and result.answer == "It is an error dialog."
    shown = [c for c in model.calls if c.media]
    assert len(shown) == 1 and (shown[0].media[0].width, shown[0].media[0].height) == (32, 24)
    text = shown[0].input
    opened, closed = text.index("\u27e6data from take_screenshot"), text.rindex("\u27e6end of data")
    assert opened < text.index("shown after this: take_screenshot image 2") < closed
    # the picture came in a session made to take it (the text-only one refuses pictures)
    assert model.media_refusals == 0
    observation = result.steps[0].observation
    assert "take_screenshot image 2: image (PNG, 32×24" in observation


def test_a_tools_picture_is_named_to_a_model_that_cannot_see():
    model = FunctionModel(_tool_then_answer)   # text only
    agent = Agent(model=model, tools=[_screenshot_tool()])
    result = run(agent.run("take a screenshot of the screen and tell me what it shows", "s"))
    assert result.status == "answered"
    assert not any(c.media for c in model.calls)
    assert "which this model cannot see" in result.steps[0].observation


class _Tab:
    """A page source with a screenshot and one picture, as the extension's tab reader."""

    async def call(self, name, arguments):
        if name == "capture_tab":
            return {"image": samples.png(64, 40), "type": "image/png", "title": "Fixture",
                    "url": "http://127.0.0.1/fixture.html"}
        if name == "look_at_image":
            return {"image": samples.jpeg_header(300, 200), "alt": "a harbour at dusk",
                    "title": "Fixture"}
        if name == "page_images":
            return {"images": [{"alt": "a harbour at dusk", "width": 300, "height": 200,
                                "url": "http://127.0.0.1/h.jpg"}], "title": "Fixture",
                    "url": "http://127.0.0.1/"}
        raise AssertionError(name)


def test_capture_tab_gives_a_model_that_sees_the_screenshot():
    from py_agent.page import page_tools
    tools = {t.name: t for t in page_tools(_Tab(), summarize=False)}

    def reply(call: PromptCall) -> str:
        if call.purpose is Purpose.DESCRIBE:
            return json.dumps({"descriptions": ["x"]})
        if "Observation from capture_tab" in call.input:
            return step_json(answer="A page with a chart.")
        return step_json(tool="capture_tab", tool_input={})

    model = FunctionModel(reply, accepts=("image",))
    agent = Agent(model=model, tools=list(tools.values()))
    result = run(agent.run("take a screenshot: what does this page look like?", "s"))
    assert result.answer == "A page with a chart."
    sent = [m for c in model.calls for m in c.media]
    assert [(m.type, m.width, m.height) for m in sent] == [("image/png", 64, 40)]
    listing = run(tools["page_images"].invoke(None, {}))
    assert "picture 1: “a harbour at dusk”, 300×200" in listing and "<page-data" in listing
    looked = run(tools["look_at_image"].invoke(None, {"index": 1}))
    assert looked.media[0].type == "image/jpeg" and "a harbour at dusk" in looked.text


def test_a_picture_too_large_for_the_window_is_scaled_down_before_it_is_refused():
    scaled = []

    async def halve(attachment, factor):   # as Pillow or the page's worker would
        scaled.append((attachment.width, factor))
        return Attachment(content=samples.png(int(attachment.width * factor),
                                              int(attachment.height * factor)),
                          name=attachment.label).loaded()

    def agent_for(scaler):
        return Agent(model=FunctionModel(answering(), accepts=("image",), context_window=4000),
                     image_scaler=scaler)

    big = Attachment(content=samples.png(2048, 2048), name="big.png")   # 64 tiles: 4104 tokens
    result = run(agent_for(halve).run("what is this", "s", attachments=[big]))
    assert result.status == "answered", result.answer
    assert scaled[0] == (2048, 0.5) and len(scaled) >= 1
    without = run(agent_for(None).run("what is this", "s", attachments=[big]))
    assert without.status == "error"
    assert "too large for the model's context window and nothing here can scale them" \
        in without.answer


def test_the_summary_and_the_memory_session_read_the_attachments_text_not_bytes():
    from py_agent.memory.summary import render_turns_for_summary
    from py_agent.state import Turn
    turn = Turn(id=12, user="What is the total?", answer="42.10 EUR.",
                attachments=[AttachmentRecord(id="a1", name="receipt.jpg", type="image/jpeg",
                                              size=1000, width=1600, height=1200,
                                              description="a grocery receipt, total 42.10 EUR",
                                              kept=True)])
    text = render_turns_for_summary([turn], 200)
    assert ("Attached: [picture receipt.jpg from turn 12, 1600×1200: a grocery receipt, "
            "total 42.10 EUR]") in text
    again = Turn.from_dict(json.loads(json.dumps(turn.to_dict())))
    assert again.attachments == turn.attachments
