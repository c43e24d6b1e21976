"""Pictures and sounds on an OpenAI-compatible server (the fake, over real HTTP on
localhost), and ``py-agent chat --attach`` / ``/attach`` as a user runs them."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import tempfile
import json
from pathlib import Path

from py_agent import Agent, Attachment
from py_agent.model import InputNotSupportedError
from py_agent.openai_compat import OpenAIModel, Timeouts
from tests.fake_openai_server import FakeServer, agent_responder
from tests.unit import media_samples as samples
from tests.unit.support import run

ROOT = Path(__file__).resolve().parents[2]
FAST = Timeouts(connect=2, read=5, call=10, probe=1)


def test_pictures_and_sounds_go_as_data_urls_and_input_audio_parts():
    with FakeServer(agent_responder) as server:
        agent = Agent(model=OpenAIModel(server.url, "fake-model", timeouts=FAST))
        result = run(agent.run("What is this?", "s", attachments=[
            Attachment(content=samples.png(12, 9), name="a.png"),
            Attachment(content=samples.wav(0.5), name="hello.wav")]))
        bodies = server.chat_requests()
    assert result.status == "answered", result.answer
    assert "I received: image (image/png, 12×9" in result.answer
    assert "audio (audio/wav" in result.answer
    first = bodies[0]["messages"][-1]["content"]
    assert first[0]["type"] == "text" and "User: What is this?" in first[0]["text"]
    assert first[1]["image_url"]["url"].startswith("data:image/png;base64,iVBOR")
    assert first[2]["input_audio"]["format"] == "wav"
    # later requests of other turns carry none; the record keeps the server's description
    record = run(agent.transcript("s"))[0].attachments
    assert [r.description for r in record] == ["an image the user sent", "a sound the user sent"]


def test_a_server_that_cannot_see_is_explained_and_the_text_can_go_alone():
    with FakeServer(agent_responder, vision=False) as server:
        model = OpenAIModel(server.url, "fake-model", timeouts=FAST)
        agent = Agent(model=model)
        refused = run(agent.run("Which bar is tallest?", "s",
                                attachments=[Attachment(content=samples.png(), name="chart.png")]))
        support = run(agent.media_support())
        again = run(agent.run("Which bar is tallest?", "s"))   # the user's "send text only"
        asked = len(server.chat_requests())
        # a later picture is refused before any request: the server said it cannot
        third = run(agent.run("And this one?", "s",
                              attachments=[Attachment(content=samples.png(), name="b.png")]))
        assert len(server.chat_requests()) == asked
    assert refused.status == "error"
    assert "The model 'fake-model'" in refused.answer and "does not take images" in refused.answer
    assert "image input is not supported" in refused.answer
    assert refused.error.startswith("InputNotSupportedError")
    assert not support.can("image") and "fake-model" in support.reason("image")
    assert again.status == "answered" and again.answer == "You said: Which bar is tallest?"
    assert third.status == "error" and "does not take images" in third.answer
    turns = run(agent.transcript("s"))
    assert turns[0].attachments[0].name == "chart.png" and turns[0].status == "error"


def test_the_refusal_is_typed_for_a_direct_prompt_too():
    with FakeServer(agent_responder, vision=False) as server:
        model = OpenAIModel(server.url, "fake-model", timeouts=FAST)

        async def go():
            session = await model.create(initial_prompts=[], expected_inputs=("image",))
            await session.prompt([{"type": "text", "value": "hi"},
                                  {"type": "image",
                                   "value": Attachment(content=samples.png()).loaded()}])
        try:
            run(go())
        except InputNotSupportedError as exc:
            assert exc.kinds == frozenset({"image"}) and exc.model == "fake-model"
        else:
            raise AssertionError("the refusal was not raised")


def chat(url: str, lines: str, *args: str):
    command = [sys.executable, "-m", "py_agent", "chat", "--base-url", url, "--model",
               "fake-model", "--timeout", "5", *args]
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("PY_AGENT_API_KEY", "OPENAI_API_KEY")}
    environment["XDG_DATA_HOME"] = tempfile.mkdtemp(prefix="py-agent-attach-test-")
    return subprocess.run(command, input=lines, capture_output=True, text=True, cwd=ROOT,
                          env=environment, timeout=90)


def test_the_terminal_attaches_files_with_the_flag_and_the_command(tmp_path):
    photo, notes = tmp_path / "photo.png", tmp_path / "notes.pdf"
    photo.write_bytes(samples.png(30, 20))
    notes.write_bytes(samples.PDF)
    db = tmp_path / "chat.db"
    with FakeServer(agent_responder) as server:
        done = chat(server.url, f"What is this?\n/attach {notes}\n/attach {photo}\n"
                                "And this?\nNo picture now\n",
                    "--attach", str(photo), "--db", str(db), "--session", "t")
        media = [len([p for p in (b["messages"][-1]["content"] if isinstance(
            b["messages"][-1]["content"], list) else []) if p["type"] == "image_url"])
            for b in server.chat_requests()]
    assert done.returncode == 0, done.stderr
    answers = done.stdout.splitlines()
    assert answers[0].startswith("You said: What is this?. I received: image (image/png, 30×20")
    assert answers[1].startswith("You said: And this?. I received: image (image/png, 30×20")
    assert answers[2] == "You said: No picture now"
    assert "notes.pdf is not an image or a sound (it is a PDF document)" in done.stderr
    assert "attached photo.png: image (PNG, 30×20" in done.stderr
    assert media.count(1) >= 2 and media[-1] == 0
    with sqlite3.connect(db) as connection:
        kept = connection.execute("SELECT COUNT(*), SUM(length(data)) FROM blobs").fetchone()
        turns = [json.loads(r[0]) for r in connection.execute("SELECT turn FROM archive")]
    assert kept == (2, 2 * len(samples.png(30, 20)))
    assert [len(t.get("attachments", [])) for t in turns] == [1, 1, 0]


def test_a_missing_attach_file_is_refused_before_anything_starts(tmp_path):
    done = chat("http://127.0.0.1:9", "hi\n", "--attach", str(tmp_path / "gone.jpg"),
                "--db", str(tmp_path / "x.db"))
    assert done.returncode == 2 and "--attach" in done.stderr and "no such file" in done.stderr
    assert not (tmp_path / "x.db").exists()
