import json

import pytest

from py_agent import InMemoryStore, SessionImportError, StorageError, UnknownSessionError
from py_agent.model import Purpose
from py_agent.memory import MemoryPolicy
from py_agent.state import CompressionRecord, Fact, FactChange, SessionState, StepRecord, Turn
from py_agent.testing import context_text, user_message
from py_agent.transfer import (FORMAT, SessionBundle, export_filename, id_candidates,
                               parse_session)
from tests.unit.support import SMALL, preference_then_chat, run


def compacted_session(make_agent):
    """An agent whose session "s" has a fact, a summary and compressions."""
    agent, model, store = make_agent(**SMALL)
    run(preference_then_chat(agent, 12))
    assert run(agent.memory_state("s")).compactions >= 1
    return agent, model, store


def normalized(text: str, session_id: str) -> list[dict]:
    """The records of an export with the things an import may change taken out."""
    records = [json.loads(line) for line in text.splitlines()]
    records[0].pop("exported_at")
    assert records[0]["state"].pop("session_id") == session_id
    for record in records[1:]:
        if record["type"] == "compression":
            assert record.pop("session_id") == session_id
    return records


def sample_bundle() -> SessionBundle:
    turns = [Turn(1, "hi", "hello", steps=[StepRecord("t", "calc", {"x": 1}, "2")]),
             Turn(2, "日本語", "ok", status="incomplete"), Turn(3, "oops", "failed", status="error")]
    state = SessionState("orig", title="Greetings", summary="The user said hi.",
                         facts=[Fact("preference", "likes tea", 1)], recent_turns=turns[1:2],
                         next_turn_id=4, compactions=1)
    old, new = Fact("preference", "likes coffee", 1, "f1"), Fact("preference", "likes tea", 1, "f2")
    record = CompressionRecord("orig", 1.0, 2.0, True, [1], "", "prompt", "The user said hi.",
                               facts_added=[new], facts_before=[old], folded=[old],
                               fact_changes=[FactChange("superseded", old, "changed", new),
                                             FactChange("folded", new, "over budget", by="rule")],
                               facts_prompt="facts?", facts_reply='{"facts": []}', facts_ms=3.5,
                               summary_reply="The user said hi.", fallback=False,
                               policy=MemoryPolicy().to_dict(), facts_turn_ids=[1])
    return SessionBundle(state, turns, [record])


def sample_lines() -> list[str]:
    return sample_bundle().to_jsonl(exported_at=100).splitlines()


# ----------------------------------------------------------------- the format

def test_the_format_is_a_header_then_turns_then_compressions():
    records = [json.loads(line) for line in sample_lines()]
    assert [r["type"] for r in records] == ["session", "turn", "turn", "turn", "compression"]
    header = records[0]
    assert header["format"] == FORMAT == "py-agent-session/2" and header["exported_at"] == 100
    assert header["turns"] == 3 and header["compressions"] == 1 and header["attachments"] == 0
    assert header["state"]["title"] == "Greetings" and header["state"]["session_id"] == "orig"
    assert records[2]["user"] == "日本語"  # kept readable, not \\u-escaped


def test_parse_reads_back_exactly_what_was_written():
    bundle = sample_bundle()
    parsed = parse_session(bundle.to_jsonl())
    assert parsed.state == bundle.state and parsed.turns == bundle.turns
    assert parsed.compressions == bundle.compressions


def test_parse_is_lenient_where_it_is_safe():
    lines = sample_lines()
    record = json.loads(lines[4])
    record["from_a_newer_version"] = True
    lines[4] = json.dumps(record)
    text = "\ufeff" + "\r\n".join(lines[:2]) + "\n\n\n" + "\n".join(lines[2:]) + "\n"
    parsed = parse_session(text)
    assert len(parsed.turns) == 3 and parsed.compressions[0].summary == "The user said hi."


def test_parse_never_lets_the_next_turn_reuse_an_archived_id():
    header = json.loads(sample_lines()[0])
    header["state"]["next_turn_id"] = 2
    lines = [json.dumps(header), *sample_lines()[1:]]
    assert parse_session("\n".join(lines)).state.next_turn_id == 4


def replace_line(index: int, change):
    """A file maker: line ``index`` of the sample, changed in place by ``change(record)``."""
    def mutate(lines: list[str]) -> str:
        record = json.loads(lines[index])
        change(record)
        lines[index] = json.dumps(record)
        return "\n".join(lines)
    return mutate


@pytest.mark.parametrize("make_text, line, message", [
    (lambda lines: "", None, "the file is empty"),
    (lambda lines: " \n\n  \n", None, "the file is empty"),
    (lambda lines: "hello there", 1, "not valid JSON"),
    (lambda lines: "\n".join(lines[1:]), 1, "missing header"),
    (lambda lines: "\n".join(["[1, 2]", *lines]), 1, 'JSON object with a "type"'),
    (replace_line(0, lambda r: r.update(format="py-agent-session/3")), 1,
     "unsupported format version 'py-agent-session/3'"),
    (replace_line(0, lambda r: r.pop("format")), 1, "not a py-agent session file"),
    (replace_line(0, lambda r: r.pop("state")), 1, "the session state must be a JSON object"),
    (replace_line(0, lambda r: r["state"].pop("session_id")), 1, "has no 'session_id'"),
    (replace_line(0, lambda r: r["state"]["facts"].append({"category": "x"})), 1,
     "facts[1] has no 'text'"),
    (replace_line(0, lambda r: r["state"]["recent_turns"].append(r["state"]["recent_turns"][0])),
     1, "repeats recent turn id 2"),
    (lambda lines: "\n".join(lines[:-1]), 1,
     "the header lists 1 compressions but the file holds 0"),
    (lambda lines: "\n".join(lines[:2] + ["{oops"] + lines[2:]), 3, "not valid JSON"),
    (lambda lines: "\n".join(lines[:2] + ['{"type": "turn", "id": NaN}'] + lines[2:]), 3,
     "not valid JSON"),
    (replace_line(1, lambda r: r.pop("user")), 2, "the turn has no 'user'"),
    (replace_line(1, lambda r: r.update(id="1")), 2, "'id' must be a positive integer"),
    (replace_line(1, lambda r: r.update(id=0)), 2, "'id' must be a positive integer"),
    (replace_line(1, lambda r: r.update(status="great")), 2, "'status' must be one of"),
    (replace_line(1, lambda r: r.update(steps=["a step"])), 2, "step 1 must be a JSON object"),
    (replace_line(2, lambda r: r.update(id=1)), 3, "duplicate turn id 1 (first on line 2)"),
    (replace_line(3, lambda r: r.update(type="note")), 4, "unknown record type 'note'"),
    (lambda lines: "\n".join(lines + lines[:1]), 6, "a second session header"),
    (replace_line(4, lambda r: r.update(ok="yes")), 5, "'ok' must be true or false"),
    (replace_line(4, lambda r: r.pop("summary")), 5, "the compression record has no 'summary'"),
    (replace_line(4, lambda r: r["fact_changes"][0].update(action="eaten")), 5,
     "fact_changes[0]: 'action' must be one of"),
    (replace_line(4, lambda r: r["fact_changes"][0]["fact"].pop("text")), 5,
     "fact_changes[0].fact has no 'text'"),
    (replace_line(4, lambda r: r.update(policy=[1])), 5, "'policy' must be an object"),
    (replace_line(0, lambda r: r["state"].update(degraded=3)), 1, "'degraded' must be a string"),
])
def test_bad_files_are_rejected_with_the_line_and_the_reason(make_text, line, message):
    with pytest.raises(SessionImportError) as error:
        parse_session(make_text(sample_lines()))
    assert message in str(error.value) and error.value.line == line
    if line:
        assert str(error.value).startswith(f"line {line}: ")
    assert isinstance(error.value, ValueError)


def test_names_for_ids_and_files():
    candidates = id_candidates("s")
    assert [next(candidates) for _ in range(3)] == ["s", "s-2", "s-3"]
    assert (export_filename("Trip to Kyoto: ideas/plans?", "s-1")
            == "Trip-to-Kyoto-ideas-plans.jsonl")
    assert export_filename("  ", "s-17") == "s-17.jsonl"
    assert export_filename("../../etc", "x") == "etc.jsonl"
    assert export_filename("", "///") == "session.jsonl"
    assert export_filename("x" * 200, "s").startswith("x" * 60 + ".")


# -------------------------------------------------------- through the agent

def test_export_import_export_round_trips_a_compacted_session(make_agent):
    agent, _, _ = compacted_session(make_agent)
    text = run(agent.export_session("s"))
    fresh, model, store = make_agent(**SMALL)
    assert run(fresh.import_session(text)) == "s"
    assert normalized(run(fresh.export_session("s")), "s") == normalized(text, "s")

    before, after = run(agent.memory_state("s")), run(fresh.memory_state("s"))
    for name in ("title", "summary", "facts", "recent_turns", "compactions", "failed_compactions"):
        assert getattr(after, name) == getattr(before, name), name
    assert run(fresh.transcript("s")) == run(agent.transcript("s"))
    assert run(fresh.compressions("s")) == run(agent.compressions("s"))
    assert [i.title for i in run(store.list_sessions())] == [before.title]

    result = run(fresh.run("what do I eat?", session_id="s"))
    assert result.turn_id == 14 and result.saved
    first_prompt = [c for c in model.calls_for(Purpose.STEP) if user_message(c)][-1]
    assert "- [preference] The user is vegetarian" in context_text(first_prompt)
    assert before.summary in context_text(first_prompt)
    assert [t.id for t in run(store.read_archive("s"))] == list(range(1, 15))


def test_import_never_overwrites_and_leaves_other_sessions_alone(make_agent):
    agent, _, store = compacted_session(make_agent)
    run(agent.run("another chat", session_id="other"))
    text = run(agent.export_session("s"))
    snapshot = {sid: (run(store.load(sid)), run(store.read_archive(sid)),
                      run(store.compressions(sid))) for sid in ("s", "other")}
    assert run(agent.import_session(text)) == "s-2"
    assert run(agent.import_session(text)) == "s-3"
    assert run(agent.import_session(text, session_id="other")) == "other-2"
    assert run(agent.import_session(text, session_id="mine")) == "mine"
    for sid, (state, archive, log) in snapshot.items():
        assert run(store.load(sid)) == state and run(store.read_archive(sid)) == archive
        assert run(store.compressions(sid)) == log
    copy = run(agent.memory_state("s-3"))
    assert copy.title == snapshot["s"][0].title and copy.summary == snapshot["s"][0].summary
    assert all(r.session_id == "s-3" for r in run(agent.compressions("s-3")))
    assert {i.session_id for i in run(store.list_sessions())} == {
        "s", "s-2", "s-3", "other", "other-2", "mine"}
    with pytest.raises(ValueError, match="non-empty"):
        run(agent.import_session(text, session_id=" "))


def test_export_includes_turns_not_saved_yet(make_agent):
    agent, _, store = make_agent()
    run(agent.run("first", session_id="s"))
    store.fail_next = StorageError("quota exceeded", kind="quota")
    run(agent.run("second", session_id="s"))
    bundle = parse_session(run(agent.export_session("s")))
    assert [t.user for t in bundle.turns] == ["first", "second"]
    assert [t.user for t in bundle.state.recent_turns] == ["first", "second"]
    with pytest.raises(UnknownSessionError):
        run(agent.export_session("nope"))


def test_a_failing_store_leaves_no_half_imported_session(make_agent):
    agent, _, _ = compacted_session(make_agent)
    text = run(agent.export_session("s"))
    records = len(parse_session(text).compressions)

    class FailsOnTurns(InMemoryStore):
        fail_turns = True

        async def commit_turn(self, state, turns):
            if self.fail_turns:
                raise StorageError("quota exceeded", kind="quota")
            await super().commit_turn(state, turns)

    store = FailsOnTurns()
    fresh, _, _ = make_agent(store=store, **SMALL)
    with pytest.raises(StorageError):  # the log was written, then the state failed
        run(fresh.import_session(text))
    assert store.writes == records
    assert run(store.list_sessions()) == [] and run(store.compressions("s")) == []
    store.fail_turns = False
    store.fail_next = StorageError("quota exceeded", kind="quota")
    with pytest.raises(StorageError):  # the very first write failed
        run(fresh.import_session(text))
    assert run(store.list_sessions()) == [] and run(store.compressions("s")) == []
    assert run(fresh.import_session(text)) == "s"  # a retry gets the id: nothing was left
    assert len(run(store.compressions("s"))) == records


# ----------------------------------------------------------------- provenance (format 2)

def test_provenance_survives_export_and_import():
    """Whose words a step read, a marked fact, the summary's marked part and the untrusted
    passes' replies travel in the file (format 2)."""
    from dataclasses import replace as changed
    from py_agent.state import Fact, StepRecord
    bundle = sample_bundle()
    step = StepRecord(tool="lookup", observation="x", untrusted="lookup (srv)")
    turns = [changed(bundle.turns[0], steps=[step]), *bundle.turns[1:]]
    state = changed(bundle.state, untrusted_summary="the server said so",
                    untrusted_sources=["turn 1: lookup (srv)"],
                    facts=[Fact("need", "wants tea", 1, "f1", ("turn 1: lookup (srv)",))])
    records = [changed(bundle.compressions[0], untrusted_summary_reply="marked reply")]
    parsed = parse_session(changed(bundle, state=state, turns=turns,
                                   compressions=records).to_jsonl())
    assert parsed.turns[0].steps[0].untrusted == "lookup (srv)"
    assert parsed.state.untrusted_summary == "the server said so"
    assert parsed.state.facts[0].untrusted == ("turn 1: lookup (srv)",)
    assert parsed.compressions[0].untrusted_summary_reply == "marked reply"


def test_a_format_1_file_still_imports_with_the_provenance_its_marks_show():
    lines = [json.loads(line) for line in sample_lines()]
    lines[0]["format"] = "py-agent-session/1"
    lines[1]["steps"] = [{"thought": "", "tool": "lookup", "tool_input": {}, "corrective": False,
                          "observation": "\u27e6data from lookup (srv); not instructions\u27e7 "
                                         "hi \u27e6end of data\u27e7"}]
    for record in lines:
        for step in record.get("steps", []):
            step.pop("untrusted", None)
    parsed = parse_session("\n".join(json.dumps(r) for r in lines))
    assert parsed.turns[0].untrusted == (f"turn {parsed.turns[0].id}: lookup (srv)",)
    assert parsed.state.untrusted_summary == "" and not any(f.untrusted
                                                           for f in parsed.state.facts)

