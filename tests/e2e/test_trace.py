"""The live trace under an answer: the tools the retriever offered with their scores,
each step's thought, tool call, observation and timing, badges on corrective steps,
and tool output that carries markup shown as text."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.pages import ASSISTANT, TURN_TIMEOUT_MS, boot, send, step_responder, wait_until

pytestmark = pytest.mark.e2e

# One turn that needs every guard: a reply that is not JSON, a tool that does not
# exist, a real tool call, the same call again, then (once the test releases it) the
# answer.
CORRECTIVE_RESPONDER = step_responder(setup="let steps = 0;", body=r"""
    steps += 1;
    if (steps === 1) return 'Sure, I can do that in my head.';
    if (steps === 2) {
      return step({thought: 'Maybe the abacus.', toolName: 'abacus', toolInput: {beads: 42}});
    }
    if (steps === 3 || steps === 4) {
      return step({thought: 'I should use the calculator.', toolName: 'calculate',
                   toolInput: {expression: '6*7'}});
    }
    await new Promise((resolve) => { window.__releaseAnswer = resolve; });
    return step({thought: 'The calculator said 42.', finalAnswer: 'Six times seven is **42**.'});""")

# Tool output (and a tool name, and a thought) carrying markup.
EVIL = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=1</script>'
INJECTING_RESPONDER = step_responder(setup="let steps = 0;\nconst evil = %r;" % EVIL, body=r"""
    steps += 1;
    if (steps === 1) {
      return step({thought: 'Thinking <b>hard</b> ' + evil, toolName: 'calculate',
                   toolInput: {expression: evil}});
    }
    if (steps === 2) return step({thought: 'Another tool.', toolName: evil, toolInput: evil});
    return step({thought: 'Done.', finalAnswer: 'That expression is not arithmetic.'});""")


def kinds(steps) -> list[str]:
    return steps.evaluate_all("nodes => nodes.map(n => n.dataset.kind)")


def badges(steps) -> list[str]:
    return steps.evaluate_all(
        "nodes => nodes.map(n => { const b = n.querySelector('[data-testid=step-badge]');"
        " return b.hidden ? '' : b.textContent; })")


def check_corrective_steps(steps) -> None:
    expect(steps).to_have_count(5)
    assert kinds(steps) == ["corrective", "corrective", "tool", "repeat", "answer"]
    assert badges(steps) == ["corrected: invalid JSON", "corrected: unknown tool", "",
                             "corrected: repeated action", ""]
    expect(steps.nth(0).locator('[data-part="observation"]')).to_contain_text("not valid JSON")
    expect(steps.nth(1).locator(".tool")).to_have_text("abacus")
    expect(steps.nth(1).locator('[data-part="thought"]')).to_have_text("Maybe the abacus.")
    expect(steps.nth(1).locator('[data-part="observation"]')).to_contain_text(
        "There is no tool named 'abacus'")
    expect(steps.nth(2).locator(".tool")).to_have_text("calculate")
    expect(steps.nth(2).locator(".tool-input")).to_contain_text('"6*7"')
    expect(steps.nth(2).locator('[data-part="observation"]')).to_have_text("6*7 = 42")
    expect(steps.nth(3).locator('[data-part="observation"]')).to_contain_text(
        "You already called calculate")


def test_trace_shows_scores_and_corrections(shared_chat, app_server: str) -> None:
    # Replies that are not steps, or name a tool not offered: Chrome's constrained
    # decoding could not produce them, so the fake lets them through (replyCheck off).
    page, watch = shared_chat.open(responderSource=CORRECTIVE_RESPONDER, replyCheck="off")
    send(page, "Please calculate 6*7 for me")
    message = page.locator(ASSISTANT).last
    steps = message.get_by_test_id("trace-step")

    # Live, while the answer is still being worked on.
    offered = message.get_by_test_id("tools-offered")
    expect(offered).to_be_visible(timeout=TURN_TIMEOUT_MS)
    expect(offered).to_contain_text("Tools offered: calculate ")
    calculate = offered.locator('.offered-tool[data-tool="calculate"]')
    score = calculate.get_attribute("data-score")
    assert re.fullmatch(r"\d+\.\d+", score) and float(score) > 0
    expect(calculate).to_have_text("calculate " + score)
    # Ranked best first, with " · " between them.
    scores = offered.locator(".offered-tool").evaluate_all(
        "nodes => nodes.map(n => parseFloat(n.dataset.score))")
    assert scores == sorted(scores, reverse=True)
    expect(offered).to_have_text(
        re.compile(r"^Tools offered: calculate \d+\.\d+( · \S+ \d+\.\d+)*$"))

    # Four steps done, the fifth (the answer) under way.
    expect(steps).to_have_count(5, timeout=TURN_TIMEOUT_MS)
    expect(steps.nth(3)).to_have_attribute("data-kind", "repeat")
    expect(steps.nth(4)).to_have_attribute("data-state", "running")
    expect(steps.nth(0).get_by_test_id("step-badge")).to_have_text("corrected: invalid JSON")
    expect(steps.nth(1).get_by_test_id("step-badge")).to_have_text("corrected: unknown tool")
    expect(steps.nth(3).get_by_test_id("step-badge")).to_have_text("corrected: repeated action")
    expect(steps.nth(2).locator(".step-timing")).to_contain_text("tool")
    expect(message).to_have_attribute("data-state", "pending")

    wait_until(page, "typeof window.__releaseAnswer === 'function'")
    page.evaluate("window.__releaseAnswer()")
    expect(message).to_have_attribute("data-state", "answered", timeout=TURN_TIMEOUT_MS)
    expect(message.locator(".text strong")).to_have_text("42")
    check_corrective_steps(steps)
    for index in range(5):
        expect(steps.nth(index).locator(".step-timing")).to_contain_text("model")
    expect(steps.nth(4).locator('[data-part="thought"]')).to_have_text("The calculator said 42.")
    expect(message.locator(".trace-summary")).to_have_text("5 steps · calculate · 3 corrected")

    # From the archive after a reload: the same kinds and badges (no timings kept).
    boot(page, app_server + "/")
    message = page.locator(ASSISTANT).last
    message.locator(".trace-summary").click()
    check_corrective_steps(message.get_by_test_id("trace-step"))
    assert watch.problems == []


def test_markup_in_tool_output_stays_text(shared_chat, app_server: str) -> None:
    # A tool name outside the schema's enum: only a backend without constrained decoding
    # sends that (replyCheck off).
    page, watch = shared_chat.open(responderSource=INJECTING_RESPONDER, replyCheck="off")
    send(page, "Please calculate this expression for me")
    message = page.locator(ASSISTANT).last
    expect(message).to_have_attribute("data-state", "answered", timeout=TURN_TIMEOUT_MS)
    steps = message.get_by_test_id("trace-step")
    expect(steps).to_have_count(3)

    def check(steps) -> None:
        first, second = steps.nth(0), steps.nth(1)
        expect(first.locator('[data-part="thought"]')).to_have_text("Thinking <b>hard</b> " + EVIL)
        expect(first.locator(".tool-input")).to_contain_text('<img src=x onerror=\\"window')
        observation = first.locator('[data-part="observation"]')
        expect(observation).to_contain_text("cannot parse '" + EVIL + "' as arithmetic")
        expect(second.locator(".tool")).to_have_text(EVIL)
        expect(second.locator('[data-part="observation"]')).to_contain_text(
            "There is no tool named '" + EVIL + "'")
        assert page.locator('[data-testid="messages"] :is(img, script, b)').count() == 0
        assert page.evaluate("window.__pwned") is None

    check(steps)
    boot(page, app_server + "/")
    message = page.locator(ASSISTANT).last
    message.locator(".trace-summary").click()
    check(message.get_by_test_id("trace-step"))
    assert watch.problems == []
