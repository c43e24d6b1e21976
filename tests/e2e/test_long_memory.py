"""A preference said at turn 1 shapes a tool call at turn 30, through memory alone.

The page, the real worker and real IndexedDB, with a fake model that behaves like a
model that reads its prompt: it passes ``diet="vegetarian"`` to ``find_recipes`` only
when its prompt says the user is vegetarian. By turn 30 the first turn has been
compacted out of the raw turns, so the preference can only arrive as a key fact.
"""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from tests.e2e.pages import ASSISTANT, TURN_TIMEOUT_MS, chat

pytestmark = pytest.mark.e2e

PREFERENCE = "I'm vegetarian, by the way, and I cook for two most evenings."

# Filler turns are long enough (about 300 tokens each) that the raw turns outgrow
# their budget well before turn 30. The summary leaves diets out on purpose: the key
# fact must carry the preference.
RESPONDER = r"""(() => {
  const filler = (topic) => ('Here is what I know about ' + topic + '. ').repeat(24);
  const step = (fields) => JSON.stringify(Object.assign(
      {thought: '', toolName: 'none', toolInput: '', finalAnswer: ''}, fields));
  return async (input, ctx) => {
    const text = String(input);
    const schema = ctx.responseConstraint;
    if (schema && schema.properties && schema.properties.facts) {
      const vegetarian = /I'm vegetarian/.test(text);
      return JSON.stringify({facts: vegetarian ?
          [{category: 'preference', text: 'The user is vegetarian.'}] : []});
    }
    if (!schema && text.includes('<turns>')) {
      const topics = [...text.matchAll(/^User: Tell me about (\w+)/gm)].map((m) => m[1]);
      return 'Summary: The user asked about ' + (topics.join(', ') || 'several topics') +
             ' and got short overviews.';
    }
    if (!(schema && schema.properties && schema.properties.toolName)) {
      return window.__fakeLM.defaultResponder(input, ctx);
    }
    if (text.startsWith('Observation from find_recipes:')) {
      return step({thought: 'Found some.', finalAnswer: 'Try this: ' +
                   text.slice('Observation from find_recipes:'.length).trim().slice(0, 300)});
    }
    const users = [...text.matchAll(/^User: (.*)$/gm)];
    const message = users.length ? users[users.length - 1][1] : '';
    if (/recipe/i.test(message)) {
      // What the model has read: its session (prefix, appended memory) and the prompt.
      const context = [...ctx.history.map((m) => m.content), text].join('\n\n');
      const memory = context.slice(context.indexOf('Memory:', context.lastIndexOf('[preference] likes short answers')),
                                   context.lastIndexOf('Tools for this request:'));
      const diet = /vegetarian/i.test(memory) ? 'vegetarian' : '';
      window.__dietSeen = diet;
      window.__memorySeen = memory;
      return step({thought: 'Look for a recipe that fits what I know.', toolName: 'find_recipes',
                   toolInput: {ingredients: 'chickpeas', diet}});
    }
    if (message === """ + json.dumps(PREFERENCE) + r""") {
      return step({finalAnswer: 'Noted, I will keep that in mind.'});
    }
    const topic = (message.match(/Tell me about (\w+)/) || [, 'that'])[1];
    return step({thought: 'I can answer this directly.', finalAnswer: filler(topic)});
  };
})()"""

TOPICS = ["rivers", "volcanoes", "comets", "glaciers", "deserts", "forests", "oceans",
          "islands", "canyons", "caves", "lakes", "tides", "storms", "clouds", "meteors",
          "planets", "moons", "stars", "galaxies", "nebulas", "reefs", "tundras", "savannas",
          "wetlands", "mountains", "valleys", "fjords", "geysers"]
MEAT_AND_FISH = ("chicken", "beef", "pork", "bacon", "ham", "lamb", "fish", "salmon",
                 "tuna", "shrimp", "prawn", "anchov")


def test_turn_one_preference_reaches_turn_thirty_as_a_key_fact(shared_chat) -> None:
    page, _ = shared_chat.open(responderSource=RESPONDER)
    chat(page, PREFERENCE)
    for topic in TOPICS:   # turns 2..29
        chat(page, f"Tell me about {topic}, in a few sentences, for a curious friend.")
    expect(page.get_by_test_id("memory-panel")).not_to_have_attribute(
        "data-compactions", "0", timeout=TURN_TIMEOUT_MS)
    expect(page.get_by_test_id("memory-panel")).to_have_attribute("data-state", "idle",
                                                                  timeout=TURN_TIMEOUT_MS)
    # Turn 1 is out of the raw turns; the preference is a key fact now.
    expect(page.locator(ASSISTANT).first).to_have_attribute("data-compacted", "true")
    facts = page.get_by_test_id("memory-facts")
    expect(facts).to_contain_text("The user is vegetarian.")

    chat(page, "Can you suggest a recipe with chickpeas for tonight?")   # turn 30
    assert page.locator(ASSISTANT).count() == 30
    assert page.evaluate("window.__dietSeen") == "vegetarian"

    calls = page.evaluate("window.__fakeLM.calls")
    step_prompts = [c for c in calls if "Tools for this request:" in str(c.get("input"))]
    last = str(step_prompts[-1]["input"])
    # The turn prompted only the tools and the message: the memory was read before,
    # appended to the chat's memory session, which the turn cloned.
    assert last.startswith("Tools for this request:") and "Memory:" not in last
    assert any(c["method"] == "append" for c in calls)
    memory = page.evaluate("window.__memorySeen")
    assert "[preference] The user is vegetarian." in memory
    assert PREFERENCE not in memory   # not as a raw turn: only through the fact

    # Tokens on the page, from the fake's log: what each turn's first prompt carried,
    # against what it would have carried with the memory in it (the memory its clone
    # had read, re-sent), and every token read in the run, appends included.
    tokens = page.evaluate("""(() => {
      const count = (t) => __fakeLM.countTokens(t) + 4;
      const firsts = __fakeLM.calls.filter((c) => c.method.startsWith('prompt') &&
                                                  c.input.startsWith('Tools for this request:'));
      const memoryOf = (c) => { const start = c.context.indexOf('Memory:',
                                  c.context.lastIndexOf('[preference] likes short answers'));
                                return start < 0 ? '' : c.context.slice(start,
                                  c.context.length - c.input.length); };
      const read = __fakeLM.calls.filter((c) => ['prompt', 'promptStreaming', 'append']
                                                .includes(c.method));
      return {now: firsts.map((c) => count(c.input)),
              before: firsts.map((c) => count(c.input) + __fakeLM.countTokens(memoryOf(c))),
              appended: read.filter((c) => c.method === 'append')
                            .reduce((n, c) => n + count(c.input), 0)};
    })()""")
    now, before = tokens["now"], tokens["before"]
    assert len(now) == 30 and now[-1] * 4 <= before[-1]
    assert sum(now) + tokens["appended"] <= sum(before)
    print(f"\npage, turn 30: first prompt {now[-1]} tokens (memory in the prompt: "
          f"{before[-1]}); 30 turns: {sum(now)} prompted + {tokens['appended']} appended "
          f"(memory in every prompt: {sum(before)})")

    answer = page.locator(ASSISTANT).last
    step = answer.get_by_test_id("trace-step").filter(has_text="find_recipes")
    expect(step.locator(".tool-input")).to_contain_text('"diet": "vegetarian"')
    observation = step.locator(".observation").text_content().lower()
    assert "chickpea" in observation
    assert not [word for word in MEAT_AND_FISH if word in observation], observation
