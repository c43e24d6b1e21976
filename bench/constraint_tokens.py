#!/usr/bin/env python3
"""What a step's JSON schema costs in the model's input: tokens per step with and without
``omitResponseConstraintInput``.

    python bench/constraint_tokens.py [--json]

The Prompt API may add a JSON-schema response constraint to the model's input; the
option ``omitResponseConstraintInput`` asks it not to. This script measures what that
input costs, on the e2e fake LanguageModel (tests/e2e/fake_language_model.js) in
headless Chromium, using the fake's own token counting (which, like Chrome, adds the
schema to the input unless the option is set, and counts a RegExp as nothing).

It plays the calls the agent's LLM host makes for real prompts: the step base session
created with the agent's fixed prefix (system instruction and worked examples), a clone
per turn, the first prompt of a turn (the tools retrieved for the message, then the
message) and the observation after the tool ran, each under the step's constraint at
every level of the ladder (py_agent/constraints.py), sent once with the schema in the
input and once without; then the fact extractor's call with its schema. For each it
reads ``contextUsage`` before and after the prompt (what the session really holds), and
``measureContextUsage`` of the prompt text (what py_agent's ``measure()`` asks).

The replies are scripted (the same in both runs), so the differences are the schema's
alone. Schema adherence on the fake says nothing about a real model: whether Gemini Nano
writes better steps when it reads the schema is not measured here (it cannot run here).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402

from py_agent.constraints import LEVELS, ConstraintLevel  # noqa: E402
from py_agent.memory.facts import FACTS_SYSTEM, facts_constraint  # noqa: E402
from py_agent.model import Purpose  # noqa: E402
from py_agent.prompting import (MemoryView, first_prompt, initial_prompts,  # noqa: E402
                                observation_prompt, step_constraint)
from py_agent.retrieval import ToolRetriever  # noqa: E402
from py_agent.testing import step_json  # noqa: E402
from py_agent.turn.compact_tool import compact_tool  # noqa: E402
from tests.e2e.conftest import CHROMIUM_FLAGS, chromium_path  # noqa: E402
from tests.unit.demo import demo_tools  # noqa: E402

FAKE_SCRIPTS = [ROOT / "tests" / "e2e" / "fake_constraints.js",
                ROOT / "tests" / "e2e" / "fake_language_model.js"]
WINDOW = 9216   # the fake's (and Chrome's) context window
MAX_STEPS = 7   # Agent(max_steps=7): the longest turn

# (message, the tool call the scripted model makes, the observation it gets back)
TURNS = [
    ("What is 17 times 23? Use the calculator.", "calculate", {"expression": "17 * 23"},
     "17 * 23 = 391"),
    ("Convert 3 miles to kilometres and tell me how long a 5k is in miles",
     "convert_units", {"value": 3, "from_unit": "mi", "to_unit": "km"}, "4.828 km"),
]
FACTS_PROMPT = ("Facts already known:\n(none yet)\n\n<turns>\nUser: I am vegetarian and I "
                "cook for two.\nAssistant: Noted!\n</turns>\n\n"
                'Reply with {"facts": [...]}; use {"facts": []} if the turns bring nothing new.')

# In the page: one turn (or one extraction) per configuration, on a clone of a base
# session holding the prefix, as web/llm_host.js sends it.
PLAY = """async ({prefix, prompts, replies, schema, omit}) => {
  const expected = {expectedInputs: [{type: 'text', languages: ['en']}],
                    expectedOutputs: [{type: 'text', languages: ['en']}]};
  const base = await LanguageModel.create({initialPrompts: prefix, ...expected});
  const session = await base.clone();
  const steps = [];
  for (let i = 0; i < prompts.length; i++) {
    __fakeLM.queueReplies(replies[i]);
    const options = schema ? {responseConstraint: schema} : {};
    if (schema && omit) options.omitResponseConstraintInput = true;
    const measured = await session.measureContextUsage(prompts[i]);
    const measuredWithSchema = schema
        ? await session.measureContextUsage(prompts[i], options) : measured;
    const before = session.contextUsage;
    await session.prompt(prompts[i], options);
    steps.push({held: session.contextUsage - before, measured, measuredWithSchema,
                reply: __fakeLM.measure(replies[i])});
  }
  base.destroy();
  session.destroy();
  return {prefix: base.contextUsage, steps};
}"""


def turn_inputs(tools, retriever, turn) -> dict:
    message, tool_name, tool_input, observation = turn
    offered = retriever.retrieve(message)
    by_name = {s.tool.name: s.tool for s in offered}
    assert tool_name in by_name, f"{tool_name} was not offered for {message!r}"
    return {"message": message, "offered": list(by_name), "by_name": by_name,
            "prompts": [first_prompt(message, offered, MemoryView()),
                        observation_prompt(tool_name, observation)],
            "replies": [step_json(thought="This needs a tool.", tool=tool_name,
                                  tool_input=tool_input),
                        step_json(thought="The tool answered.", answer=observation)]}


def measure(page, prefix, prompts, replies, schema, omit) -> dict:
    return page.evaluate(PLAY, {"prefix": prefix, "prompts": prompts, "replies": replies,
                                "schema": schema, "omit": omit})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the raw numbers as JSON")
    args = parser.parse_args()

    tools = [*demo_tools(), compact_tool()]
    retriever = ToolRetriever(tools, top_k=3)
    turns = [turn_inputs(tools, retriever, turn) for turn in TURNS]
    prefix = initial_prompts()
    rows, raw = [], []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), headless=True,
                                             args=CHROMIUM_FLAGS)
        page = browser.new_page()
        page.goto("about:blank")
        for script in FAKE_SCRIPTS:
            page.add_script_tag(path=str(script))
        count = lambda text: page.evaluate("(t) => __fakeLM.countTokens(t)", text)  # noqa: E731
        for turn in turns:
            for level in LEVELS[Purpose.STEP]:
                schema = step_constraint(level, turn["by_name"])
                sent = measure(page, prefix, turn["prompts"], turn["replies"], schema, False)
                omitted = measure(page, prefix, turn["prompts"], turn["replies"], schema, True)
                schema_tokens = count(json.dumps(schema, separators=(",", ":"))) if schema else 0
                rows.append(row(f"step: {turn['message'][:28]}… ({len(turn['offered'])} tools)",
                                level, schema_tokens, sent, omitted, MAX_STEPS))
                raw.append({"turn": turn["message"], "offered": turn["offered"],
                            "level": level.value, "schema_tokens": schema_tokens,
                            "sent": sent, "omitted": omitted})
        facts_prefix = [{"role": "system", "content": FACTS_SYSTEM}]
        facts_reply = json.dumps({"facts": [{"category": "preference",
                                             "text": "The user is vegetarian"}]})
        for level in LEVELS[Purpose.FACTS]:
            schema = facts_constraint(level)
            sent = measure(page, facts_prefix, [FACTS_PROMPT], [facts_reply], schema, False)
            omitted = measure(page, facts_prefix, [FACTS_PROMPT], [facts_reply], schema, True)
            schema_tokens = count(json.dumps(schema, separators=(",", ":"))) if schema else 0
            rows.append(row("fact extraction", level, schema_tokens, sent, omitted, 1))
            raw.append({"turn": "facts", "level": level.value, "schema_tokens": schema_tokens,
                        "sent": sent, "omitted": omitted})
        browser.close()
    if args.json:
        print(json.dumps(raw, indent=1))
        return 0
    print(f"Step prefix: {raw[0]['sent']['prefix']} tokens of a {WINDOW}-token window.\n")
    print("| call | level | schema text | tokens a call adds, schema sent | omitted | "
          f"schema over a {MAX_STEPS}-step turn (one extraction) | measure() misses per call: "
          "sent / omitted |")
    print("|---|---|---|---|---|---|---|")
    for line in rows:
        print(line)
    return 0


def row(what: str, level: ConstraintLevel, schema_tokens: int, sent: dict, omitted: dict,
        calls: int) -> str:
    """One table line: mean tokens a call adds to the session, both ways, and what the
    schema costs over ``calls`` such calls."""
    def mean(run: dict, key: str) -> float:
        return sum(s[key] for s in run["steps"]) / len(run["steps"])
    with_schema, without = mean(sent, "held"), mean(omitted, "held")
    extra = with_schema - without
    # py_agent's measure() counts the prompt text alone (Chrome's measureContextUsage never
    # counts the schema): what the session holds beyond that, per step.
    def missed(run: dict) -> float:
        return mean(run, "held") - mean(run, "measured") - mean(run, "reply")
    return (f"| {what} | {level.value} | {schema_tokens} | {with_schema:.0f} | {without:.0f} | "
            f"{extra * calls:.0f} ({extra * calls / WINDOW:.0%} of the window) | "
            f"{missed(sent):.0f} / {missed(omitted):.0f} |")


if __name__ == "__main__":
    raise SystemExit(main())
