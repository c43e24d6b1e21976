"""Tool selection in the page: the real worker, retriever and calculator, with a fake model
scripted to use the calculator whenever the retriever offered it (and to say so when it was
not offered), the way Gemini Nano can only pick a tool from the step schema's enum."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.pages import ASSISTANT, TURN_TIMEOUT_MS, chat, step_responder

pytestmark = pytest.mark.e2e

CALCULATOR_RESPONDER = step_responder(r"""
    const observed = /^Observation from calculate: .*= (\S+)$/.exec(text);
    if (observed) return step({thought: 'The calculator answered.', finalAnswer: observed[1]});
    const message = text.slice(text.lastIndexOf('User: ') + 6).trim();
    const offered = schema.properties.toolName.enum;
    if (!offered.includes('calculate')) {
      return step({finalAnswer: `NOT OFFERED: ${offered.join(', ')}`});
    }
    // The step schema must bind calculate to its own arguments.
    const branch = (schema.anyOf || []).find((b) => b.properties.toolName.const === 'calculate');
    const argsSchema = branch && branch.properties.toolInput.anyOf
      .find((s) => s.type === 'object' && s.properties && s.properties.expression);
    if (!argsSchema) return step({finalAnswer: "NO ARGUMENT SCHEMA for calculate"});
    window.__calculatorInputSchema = argsSchema;
    const m = /(\d+(?:\.\d+)?)\s*(?:times|x|\*|×)\s*(\d+(?:\.\d+)?)/i.exec(message)
      || /divide (?:that|it) by (\d+)/i.exec(message);
    if (!m) return step({finalAnswer: 'no arithmetic found'});
    const expression = m.length === 3 ? `${m[1]}*${m[2]}` : `391/${m[1]}`;
    return step({thought: 'Use the calculator.', toolName: 'calculate', toolInput: {expression}});""")


def test_the_calculator_is_offered_and_answers_17_times_23(shared_chat) -> None:
    page, watch = shared_chat.open(responderSource=CALCULATOR_RESPONDER)
    answer = chat(page, "What is 17 times 23? Use the calculator.")
    assert answer == "391"
    message = page.locator(ASSISTANT).last
    offered = message.get_by_test_id("tools-offered")
    expect(offered.locator('.offered-tool[data-tool="calculate"]')).to_have_count(1)
    assert offered.locator(".offered-tool").first.get_attribute("data-tool") == "calculate"
    # Why it was offered: the words and example that matched, and the signals.
    why = message.get_by_test_id("tools-why").locator('.tool-why[data-tool="calculate"]')
    expect(why).to_be_visible()
    expect(why).to_contain_text("calculator")
    expect(why).to_contain_text("example: “")
    assert "bm25" in why.get_attribute("data-signals").split()
    schema = page.evaluate("window.__calculatorInputSchema")
    assert schema["required"] == ["expression"] and schema["additionalProperties"] is False
    steps = message.get_by_test_id("trace-step")
    expect(steps.nth(0).locator('[data-part="observation"]')).to_have_text("17*23 = 391")

    # A follow-up names no tool; the previous turn makes the calculator a candidate.
    answer = chat(page, "now divide that by 4")
    assert answer == "97.75"
    why = page.locator(ASSISTANT).last.get_by_test_id("tools-why").locator(
        '.tool-why[data-tool="calculate"]')
    expect(why).to_have_attribute("data-signals", re.compile(r"\bprevious turn$"),
                                  timeout=TURN_TIMEOUT_MS)
    assert watch.problems == []
