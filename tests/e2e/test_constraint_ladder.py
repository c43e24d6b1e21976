"""A browser that refuses the step's JSON schema does not cost the user the answer: the
step is asked again under a simpler constraint (py_agent/constraints.py), the calculator
still answers "What is 17 times 23?", the trace names the level used, the status line
says so once, and "model unavailable" appears nowhere.

Two of the fake's profiles (tests/e2e/pages.py): ``strict-schema`` refuses ``anyOf``,
``oneOf`` and ``const`` (the agent lands on the tool-name enum, and the fake checks every
reply against it), and ``no-constraints`` refuses every ``responseConstraint`` (the agent
asks with none, and parses the reply as text). The scripted replies are what such a
model could write at that level: a compliant JSON step, or the step as text in a
Markdown fence.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.pages import FAKE_PROFILES, answer_to, chat, open_chat

pytestmark = pytest.mark.e2e

QUESTION = "What is 17 times 23? Use the calculator."
WENT_AWAY = "not available right now"

# The agent's steps, told from its other calls by the step system instruction the session
# was created with (a schema may not say: at the lower levels there is none). ``FENCE``
# wraps the step as a model writing text might.
STEP_RESPONDER = r"""(() => {
  const FENCE = %s;
  const step = (fields) => {
    const json = JSON.stringify(Object.assign(
        {thought: '', toolName: 'none', toolInput: '', finalAnswer: ''}, fields));
    return FENCE ? 'Here is my step:\n```json\n' + json + '\n```' : json;
  };
  return async (input, ctx) => {
    const system = ctx.history.length ? ctx.history[0].content : '';
    if (!system.includes('"toolName"')) return window.__fakeLM.defaultResponder(input, ctx);
    const text = String(input);
    const observed = /^Observation from calculate: [\s\S]* = (\S+)$/.exec(text);
    if (observed) {
      return step({thought: 'The calculator answered.', finalAnswer: `17 times 23 is ${observed[1]}.`});
    }
    if (/17 times 23/.test(text)) {
      return step({thought: 'This needs the calculator.', toolName: 'calculate',
                   toolInput: {expression: '17 * 23'}});
    }
    return step({thought: 'I can answer that.', finalAnswer: 'Hello!'});
  };
})()"""


def step_prompts(page: Page) -> list[dict]:
    """The options of every step prompt the fake received (refused ones included)."""
    return page.evaluate("""() => __fakeLM.callsOf('promptStreaming')
        .filter((c) => String(c.input).includes('Tools for this request')
                       || String(c.input).startsWith('Observation'))
        .map((c) => ({anyOf: JSON.stringify(c.constraint).includes('anyOf'),
                      constrained: c.hasConstraint, omitted: c.omitConstraintInput}))""")


@pytest.mark.parametrize("profile, level, label, fence", [
    ("strict-schema", "names", "tool-name enum", False),
    ("no-constraints", "none", "no constraint", True),
])
def test_a_refused_step_schema_still_answers_through_the_calculator(
        page: Page, app_server: str, install_fake_lm, profile: str, level: str, label: str,
        fence: bool) -> None:
    watch = open_chat(page, app_server, install_fake_lm, **FAKE_PROFILES[profile],
                      responderSource=STEP_RESPONDER % ("true" if fence else "false"))
    assert "391" in chat(page, QUESTION)

    answer = answer_to(page, QUESTION)
    steps = answer.get_by_test_id("trace-step")
    expect(steps).to_have_count(2)
    expect(steps.nth(0)).to_have_attribute("data-tool", "calculate")
    expect(steps.nth(0).locator('[data-part="observation"]')).to_have_text("17 * 23 = 391")
    for index in range(2):
        expect(steps.nth(index)).to_have_attribute("data-constraint", level)
        expect(steps.nth(index).get_by_test_id("step-constraint")).to_contain_text(label)
    expect(answer.locator(".trace-summary")).to_contain_text(label)
    status = page.get_by_test_id("status")
    expect(status).to_contain_text(label)
    expect(status).to_have_attribute("data-constraint", f"step:{level}")

    # One refused call per richer level, the rest at the level that works; the schema is
    # never added to the model's input.
    prompts = step_prompts(page)
    refused = {"names": 1, "none": 3}[level]
    assert len(prompts) == refused + 2
    assert prompts[0]["anyOf"] and not any(p["anyOf"] for p in prompts[1:])
    assert all(p["omitted"] == p["constrained"] for p in prompts)
    assert [p["constrained"] for p in prompts[refused:]] == [level != "none"] * 2

    # The next turn starts at that level: nothing more is refused, and the note was said once.
    assert "391" in chat(page, "And what is 17 times 23 again?")
    assert len(step_prompts(page)) == refused + 4
    expect(status).not_to_contain_text(label)

    expect(page.locator("body")).not_to_contain_text(WENT_AWAY)
    expect(page.get_by_test_id("model-state")).not_to_have_attribute("data-model", "unavailable")
    assert not [p for p in watch.problems if "pageerror" in p]
