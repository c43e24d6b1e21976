"""What the user profile costs a chat: tokens the model reads, and time per turn.

Side by side, in one run:

1. **A fact another chat adds**, for a chat whose live memory session is open: the tokens
   the model reads before that chat's next turn when the new fact is appended (what
   py-agent does) against rebuilding the memory session from the whole memory (what a
   changed or forgotten fact costs), for chats of several lengths.
2. **The profile's share of each first prompt**: tokens of the profile's facts shown,
   against the policy's ``profile_max_tokens``, for profiles of 5 to 500 facts.
3. **CPU time of the profile per turn** (choosing what a chat shows, reading the stored
   profile from SQLite), for the same profiles, against a reference workload timed in
   the same run (the machine may be shared).

    python bench/profile.py
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from py_agent import Agent, InMemoryStore, MemoryPolicy, Purpose  # noqa: E402
from py_agent.memory.live import memory_text  # noqa: E402
from py_agent.memory.profile_rules import shown_facts  # noqa: E402
from py_agent.profile import ProfileFact, UserProfile  # noqa: E402
from py_agent.sqlite_store import SqliteStore  # noqa: E402
from py_agent.state import SessionState  # noqa: E402
from py_agent.testing import FunctionModel, PromptCall, step_json, user_message  # noqa: E402
from py_agent.tokens import TokenCounter  # noqa: E402

CATEGORIES = ("preference", "need", "background")


def reference_ms() -> float:
    """A fixed pure-Python workload (a million dictionary updates), best of three."""
    best = float("inf")
    for _ in range(3):
        table: dict[int, float] = {}
        started = time.process_time()
        for i in range(1_000_000):
            table[i & 4095] = table.get(i & 4095, 0.0) + 1.5
        best = min(best, time.process_time() - started)
    return 1000 * best


def reply(call: PromptCall) -> str:
    if call.purpose is Purpose.FACTS:
        turns = call.input.partition("<turns>")[2]
        found = re.findall(r"^User: I am allergic to (\w+)\.", turns, re.MULTILINE)
        return json.dumps({"facts": [{"category": "need", "text": f"The user is allergic to {w}."}
                                     for w in found]})
    if call.purpose is Purpose.SUMMARY:
        return "The user talked about many things, " + "and more " * 40
    return step_json(answer=f"Here is a long enough answer to {user_message(call)}. " * 3)


async def appended_vs_rebuilt(turns: int) -> tuple[int, int]:
    """Tokens read when another chat adds a fact: appended, and a rebuild of the memory."""
    model = FunctionModel(reply)
    agent = Agent(model=model, store=InMemoryStore(),
                  memory=MemoryPolicy(facts_refresh_ratio=0.001))
    for i in range(turns):
        await agent.run(f"Message {i} about the garden, the weather and a book.", session_id="b")
    await agent.wait_idle()
    await agent.run("I am allergic to walnuts.", session_id="a")
    await agent.wait_idle()
    before = len(model.appends)
    await agent.run("What next?", session_id="b")
    appended = sum(a.input_tokens for a in model.appends[before:]
                   if a.input.startswith("More about the user"))
    # What a rebuild reads: the chat's whole memory as the memory session holds it.
    state = agent.sessions.state("b")
    profile = agent.memory.profile_facts(state)
    view, _ = agent.accountant.view(state, 10**6, profile)
    rebuilt = model.count(memory_text(view))
    await agent.close()
    return appended, rebuilt


def profile_of(size: int) -> UserProfile:
    profile = UserProfile()
    for i in range(size):
        profile.facts.append(ProfileFact(
            profile.new_id(), CATEGORIES[i % 3], f"The user mentioned fact number {i}, "
            f"which concerns topic {i % 17} and its details.", f"s{i % 9}", f"f{i}", i,
            1000.0 + i))
    return profile


def best_ms(action, repeat: int = 20) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.process_time()
        action()
        best = min(best, time.process_time() - started)
    return 1000 * best


def main() -> None:
    print(f"run {time.strftime('%Y-%m-%d %H:%M')}, CPython {sys.version.split()[0]}, "
          f"reference workload {reference_ms():.0f} ms CPU")
    print("\n1. A fact another chat adds: tokens read before the next turn")
    print(f"  {'turns in chat':>14} {'appended':>9} {'rebuilt':>9} {'ratio':>7}")
    for turns in (2, 8, 16):
        appended, rebuilt = asyncio.run(appended_vs_rebuilt(turns))
        print(f"  {turns:>14} {appended:>9} {rebuilt:>9} {rebuilt / appended:>6.0f}x")

    policy, counter = MemoryPolicy(), TokenCounter()
    state = SessionState("reader")
    print(f"\n2-3. The profile per turn (profile_max_tokens {policy.profile_max_tokens})")
    print(f"  {'facts':>6} {'shown':>6} {'tokens':>7} {'choose ms':>10} {'sqlite read ms':>15}")
    with tempfile.TemporaryDirectory() as folder:
        for size in (5, 50, 500):
            profile = profile_of(size)
            store = SqliteStore(Path(folder) / f"p{size}.db")
            asyncio.run(store.save_profile(profile))
            shown = shown_facts(profile, state, policy, counter)
            tokens = counter.count("About the user, remembered across chats:\n" + "\n".join(
                f"- [{f.category}] {f.text}" for f in shown))
            choose = best_ms(lambda: shown_facts(profile, state, policy, TokenCounter()))
            read = best_ms(lambda: asyncio.run(store.load_profile()))
            store.close()
            print(f"  {size:>6} {len(shown):>6} {tokens:>7} {choose:>10.2f} {read:>15.2f}")


if __name__ == "__main__":
    main()
