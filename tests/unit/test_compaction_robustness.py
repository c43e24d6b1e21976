"""Compaction that cannot hang or starve, and facts that consolidate, through the Agent."""

import asyncio
import json
import re
import time
from dataclasses import replace

from py_agent.model import ModelUnavailableError, Purpose
from py_agent.testing import PromptCall, context_text, user_message
from tests.unit.support import compactions, LONG, PREFERENCE, SMALL, chat, run, summarizer_reply

# Tiny timeouts so a hanging call costs milliseconds here (Gemini Nano gets minutes).
QUICK = replace(SMALL["memory"], summary_timeout_s=0.02, facts_timeout_s=0.5,
                retry_backoff_s=0)


async def never(call: PromptCall) -> str:
    await asyncio.Event().wait()
    raise AssertionError("unreachable")


async def paced_chat(agent, n: int, start: int = 0, session_id: str = "s") -> None:
    """Long turns from a user slower than compaction: each waits for the last to finish."""
    for i in range(start, start + n):
        await agent.run(f"Message number {i}: {LONG}", session_id=session_id)
        await agent.wait_idle()


def first_prompts(model):
    return [c for c in model.calls_for(Purpose.STEP) if user_message(c)]


def test_a_summarizer_that_never_answers_cannot_stop_the_chat_or_its_memory(make_agent):
    agent, model, store = make_agent(summary=never, window=SMALL["window"], memory=QUICK)

    async def scenario():
        results = [await agent.run(PREFERENCE, session_id="s")]
        for i in range(149):
            results.append(await agent.run(f"Message number {i}: {LONG}", session_id="s"))
            # The user reads the answer meanwhile; waiting for memory always returns.
            assert await agent.wait_idle(timeout=2)
        return results

    started = time.monotonic()
    results = run(scenario())
    assert len(results) == 150 and all(r.status == "answered" for r in results)
    state = run(agent.memory_state("s"))
    # The fact from turn 1 is in the last prompt, as a key fact: extraction did not
    # wait for the summary.
    assert "- [preference] The user is vegetarian" in context_text(first_prompts(model)[-1])
    # Memory stayed bounded without the model, and the page can say why.
    assert state.compactions >= 5 and state.budget.turns <= state.budget.turn_budget
    assert "failed" in state.degraded and "took longer than 0.02 s" in state.degraded
    records = run(compactions(agent))
    assert sum(r.fallback for r in records) >= 5
    assert all(r.fallback for r in records if r.ok)
    # Turns leaving the prompt went into the summary as the user's own words.
    assert "the user said: Message number" in state.summary
    assert len(run(store.read_archive("s"))) == 150
    # Every summary call was stopped and its clone destroyed.
    summaries = model.calls_for(Purpose.SUMMARY)
    run(asyncio.wait_for(agent.memory_sessions.wait_idle(), 5))  # its appends and rebuilds
    assert summaries and model.clones - agent.memory_sessions.live == model.destroyed
    run(asyncio.wait_for(agent.delete_session("s"), 2))
    run(asyncio.wait_for(agent.close(), 2))
    assert time.monotonic() - started < 60


def test_no_prompt_leaves_turns_out_while_the_summarizer_fails(make_agent):
    """The fallback runs before the raw turns overflow, so no prompt leaves a raw turn
    out (MemoryAccountant.view reports how many it had to leave out)."""
    def failing(call):
        raise ModelUnavailableError("the summarizer is broken")

    for summary in (failing, never):
        agent, model, _ = make_agent(summary=summary, window=SMALL["window"], memory=QUICK)
        left_out = []
        view = agent.accountant.view

        def counting_view(state, room, *profile):
            shown, dropped = view(state, room, *profile)
            left_out.append(dropped)
            return shown, dropped

        agent.accountant.view = counting_view
        run(chat(agent, 80))
        assert len(left_out) >= 80 and sum(left_out) == 0
        records = run(compactions(agent))
        assert sum(r.fallback for r in records) >= 5
        state = run(agent.memory_state("s"))
        assert state.budget.turns <= state.budget.turn_budget


def test_wait_idle_delete_and_close_return_while_a_summary_hangs(make_agent):
    slow = replace(QUICK, summary_timeout_s=60)
    agent, model, store = make_agent(summary=never, window=SMALL["window"], memory=slow)
    run(chat(agent, 9, wait=False))  # a compaction starts at the 7th (recall has room too)
    assert run(agent.memory_state("s")).compacting
    began = time.monotonic()
    assert run(agent.wait_idle(timeout=0.05)) is False
    assert run(agent.delete_session("s")) is True
    assert run(agent.wait_idle(timeout=0.05)) is True
    run(chat(agent, 10, session_id="t", wait=False))
    run(agent.close(timeout=0.05))
    assert time.monotonic() - began < 10
    assert run(store.load("s")) is None and len(run(store.read_archive("t"))) == 10


def test_memory_recovers_when_the_summarizer_works_again(make_agent):
    calls = {"n": 0}

    async def flaky(call):
        calls["n"] += 1
        if calls["n"] <= 3:
            await asyncio.Event().wait()
        return summarizer_reply(call)

    agent, _, _ = make_agent(summary=flaky, window=SMALL["window"], memory=QUICK)
    run(paced_chat(agent, 14))
    state = run(agent.memory_state("s"))
    assert re.search(r"failed \d time\(s\) in a row", state.degraded)
    assert "0.02 s" in state.degraded
    run(paced_chat(agent, 30, start=14))
    state = run(agent.memory_state("s"))
    assert state.degraded == "" and state.consecutive_failures == 0
    records = run(compactions(agent))
    assert records[-1].ok and not records[-1].fallback


def test_a_hanging_fact_extractor_does_not_stop_the_summary(make_agent):
    agent, model, _ = make_agent(facts=never, window=SMALL["window"],
                                 memory=replace(QUICK, facts_timeout_s=0.02,
                                                summary_timeout_s=5))
    run(paced_chat(agent, 12))
    state = run(agent.memory_state("s"))
    records = run(compactions(agent))
    assert state.compactions >= 1 and not state.degraded
    assert records[0].ok and not records[0].fallback
    assert "took longer than 0.02 s" in records[0].facts_error
    assert "Message number 0" in state.summary


def test_after_a_failure_the_model_rests_and_the_fallback_bounds_memory(make_agent):
    def failing(call):
        raise ModelUnavailableError("down")

    resting = replace(QUICK, retry_backoff_s=1000)
    agent, model, _ = make_agent(summary=failing, window=SMALL["window"], memory=resting)
    run(paced_chat(agent, 40))
    assert len(model.calls_for(Purpose.SUMMARY)) == 1  # asked once, then left alone
    records = run(compactions(agent))
    assert not records[0].ok and "down" in records[0].error
    assert any(r.fallback and "given a rest" in r.error for r in records[1:])
    state = run(agent.memory_state("s"))
    assert not state.budget.due


def locker_extractor(call: PromptCall) -> str:
    """Reports what the turns say, with the operations of the reply format."""
    known = dict(re.findall(r"^- (f\d+) \[[a-z-]+\] (.*)$", call.input, re.MULTILINE))
    facts = []
    for said in re.findall(r"^User: (.*)$", call.input, re.MULTILINE):
        code = re.search(r"locker code is (\d+)", said)
        if code:
            text = f"The user's gym locker code is {code.group(1)}"
            old = next((i for i, t in known.items() if "locker code" in t and t != text), None)
            facts.append({"category": "follow-up", "text": text,
                          **({"op": "update", "replaces": old} if old else {})})
        if "forget my locker" in said:
            old = next(i for i, t in known.items() if "locker code" in t)
            facts.append({"category": "follow-up", "text": "the user asked to forget it",
                          "op": "retract", "replaces": old})
    return json.dumps({"facts": facts})


def test_an_update_supersedes_the_old_fact_and_the_log_says_so(make_agent):
    agent, model, _ = make_agent(facts=locker_extractor, **SMALL)

    async def scenario():
        await agent.run("My locker code is 4471, remember it.", session_id="s")
        await paced_chat(agent, 12, start=1)
        await agent.run("New locker: my locker code is 8032 now.", session_id="s")
        await paced_chat(agent, 12, start=20)

    run(scenario())
    state = run(agent.memory_state("s"))
    assert [f.text for f in state.facts] == ["The user's gym locker code is 8032"]
    changes = [c for r in run(agent.compressions("s")) for c in r.fact_changes]
    (change,) = [c for c in changes if c.action == "superseded"]
    assert change.fact.text.endswith("4471") and change.replaced_by.text.endswith("8032")
    # The summarizer was told the old code is outdated.
    assert any("<outdated>" in c.input and "4471 (now: The user's gym locker code is 8032)"
               in c.input for c in model.calls_for(Purpose.SUMMARY))
    run(agent.run("Please forget my locker code.", session_id="s"))
    run(paced_chat(agent, 12, start=40))
    assert run(agent.memory_state("s")).facts == []
    retracted = [c for r in run(agent.compressions("s")) for c in r.fact_changes
                 if c.action == "retracted"]
    assert retracted[0].reason == "the user asked to forget it"


def key_facts(prompt: str) -> str:
    return prompt.split("Key facts:", 1)[1].split("\n\n", 1)[0] if "Key facts:" in prompt else ""


def test_a_changed_fact_is_read_at_once_even_while_the_summary_hangs(make_agent):
    """A turn that changes a key fact is read for facts right away, not at the next
    periodic refresh: the next prompt does not show the old value as current, also
    while every summary call hangs and is stopped."""
    agent, model, _ = make_agent(facts=locker_extractor, summary=never,
                                 window=SMALL["window"], memory=QUICK)

    async def scenario():
        await agent.run("My locker code is 4471, remember it.", session_id="s")
        await agent.wait_idle(timeout=2)
        for i in range(40):  # until a periodic refresh has read the code
            if (await agent.memory_state("s")).facts:
                break
            await agent.run(f"Message number {i}: {LONG}", session_id="s")
            assert await agent.wait_idle(timeout=2)
        # Right after a refresh: one short turn is far below the periodic threshold.
        await agent.run("The gym reset the lockers, my locker code is 8032 now.",
                        session_id="s")
        assert await agent.wait_idle(timeout=2)
        await agent.run("What should I cook tonight?", session_id="s")

    run(scenario())
    last = key_facts(context_text(first_prompts(model)[-1]))
    assert "8032" in last and "4471" not in last
    records = run(agent.compressions("s"))
    assert records[-1].kind == "facts" and records[-1].facts_turn_ids[-1] == \
        run(agent.memory_state("s")).facts[0].turn_id


def many_facts_extractor(call: PromptCall) -> str:
    facts = [{"category": "background", "text": f"The user owns a thing named Item{m}"}
             for m in re.findall(r"^User: Message number (\d+)", call.input, re.MULTILINE)]
    return json.dumps({"facts": facts})


def keeping_summarizer(call: PromptCall) -> str:
    """Keeps the handed-over facts, then what summarizer_reply writes."""
    keep = re.search(r"<keep>\n.*?:\n(.*?)\n</keep>", call.input, re.DOTALL)
    kept = " ".join(line[2:] + "." for line in keep.group(1).splitlines()) if keep else ""
    return (kept + " " + summarizer_reply(call)).strip()


def test_facts_over_budget_are_folded_into_the_summary_never_dropped_unseen(make_agent):
    policy = replace(SMALL["memory"], facts_max_tokens=60)
    agent, model, _ = make_agent(facts=many_facts_extractor, summary=keeping_summarizer,
                                 window=SMALL["window"], memory=policy)
    run(paced_chat(agent, 40))
    state = run(agent.memory_state("s"))
    assert state.budget.facts <= 60
    records = run(compactions(agent))
    folded = [(r, c) for r in records for c in r.fact_changes if c.action == "folded"]
    assert folded and all(c.by == "rule" for _, c in folded)
    current = {f.text for f in state.facts}
    for record, change in folded:
        # It left the key facts only into a summary that says it.
        assert change.fact.text not in current and change.fact in record.folded
        assert change.fact.text in record.summary
        assert change.fact.text in record.summary_prompt.split("<keep>")[1]


def test_a_fold_the_summary_does_not_carry_stays_a_key_fact(make_agent):
    policy = replace(SMALL["memory"], facts_max_tokens=60)
    agent, _, _ = make_agent(facts=many_facts_extractor, window=SMALL["window"],
                             memory=policy)  # summarizer_reply ignores <keep>
    run(paced_chat(agent, 40))
    records = run(compactions(agent))
    kept = [c for r in records for c in r.fact_changes if c.action == "kept"]
    assert kept and not [c for r in records for c in r.fact_changes if c.action == "folded"]
    texts = {f.text for f in run(agent.memory_state("s")).facts}
    assert all(c.fact.text in texts for c in kept)


def test_each_record_keeps_its_inputs_as_sent(make_agent):
    agent, model, _ = make_agent(**SMALL)
    run(paced_chat(agent, 14))
    records = run(agent.compressions("s"))
    summaries, facts = model.calls_for(Purpose.SUMMARY), model.calls_for(Purpose.FACTS)
    assert [r.summary_prompt for r in records if r.summary_prompt] == [c.input for c in summaries]
    assert [r.facts_prompt for r in records if r.facts_prompt] == [c.input for c in facts]
    assert [r.facts_reply for r in records if r.facts_prompt] == [c.reply for c in facts]
    record = next(r for r in records if r.kind == "compaction")
    call = summaries[0]
    assert record.summary_reply == call.reply
    assert record.summary_system == call.messages[0]["content"]
    assert record.facts_system == facts[0].messages[0]["content"] or not record.facts_prompt
    assert record.policy["summary_target_tokens"] == 200 and record.summary_ms > 0
    assert all(r.facts_ms > 0 for r in records if r.facts_prompt)
    assert sum(r.model_calls for r in records) == len(summaries) + len(facts)
