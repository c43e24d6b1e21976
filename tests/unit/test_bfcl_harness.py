"""bench/bfcl.py scores honestly: a model that answers BFCL's expected calls gets full
marks in every category and method, one that never calls gets none (but on
irrelevance), and one wrong argument fails a case. The model is a scripted
OpenAI-compatible server (tests/bfcl_oracle.py); BFCL's data and checker are the real
ones from the bfcl-eval package."""

import json
import logging

import pytest

from bench import bfcl as bfcl_cli
from bench.bfcl_data import DEFAULT_CATEGORIES, half_of, load_cases
from bench.bfcl_methods import METHODS, Sampling
from bench.bfcl_score import score, wilson
from tests.bfcl_oracle import Oracle
from tests.fake_openai_server import FakeServer

MODEL = "fake-model"


@pytest.fixture(autouse=True)
def quiet_agent():
    # The agent logs each corrective step; the oracle's wrong arguments cause some.
    logging.disable(logging.WARNING)
    yield
    logging.disable(logging.NOTSET)


def outcomes(cases, mode):
    """{method: [passed, ...]} for ``cases`` through every method against the oracle."""
    with FakeServer(Oracle(cases, mode), flavor="llama.cpp", context_window=16384,
                    models=(MODEL,)) as server:
        results = {}
        for name, method_class in METHODS.items():
            # Every tool offered to the agent, so that this tests the harness and not the
            # retriever (a multi-turn case has up to 40 functions).
            options = {"top_k": 50} if name == "py_agent" else {}
            method = method_class(server.url, MODEL, Sampling(), **options)
            results[name] = [score(case, method.run(case)).passed for case in cases]
        return results


@pytest.mark.parametrize("category", DEFAULT_CATEGORIES)
def test_the_expected_calls_score_full_marks_in_every_method(category):
    cases = load_cases(category, "tune", 2)
    assert len(cases) == 2
    assert outcomes(cases, "expected") == {name: [True, True] for name in METHODS}


@pytest.mark.parametrize("category", DEFAULT_CATEGORIES)
def test_never_calling_scores_nothing_but_on_irrelevance(category):
    cases = load_cases(category, "report", 1)
    expected = "irrelevance" in category
    assert outcomes(cases, "never") == {name: [expected] for name in METHODS}


@pytest.mark.parametrize("category", ["simple_python", "parallel_multiple", "live_multiple",
                                      "multi_turn_base"])
def test_one_wrong_argument_fails_the_case(category):
    cases = load_cases(category, "tune", 1)
    assert outcomes(cases, "wrong_argument") == {name: [False] for name in METHODS}


def test_the_halves_are_fixed_disjoint_and_limits_take_the_same_cases():
    tune = load_cases("multiple", "tune")
    report = load_cases("multiple", "report")
    assert {c.id for c in tune}.isdisjoint(c.id for c in report)
    assert len(tune) + len(report) == len(load_cases("multiple", None))
    assert all(half_of(c.id) == "report" for c in report)
    assert [c.id for c in load_cases("multiple", "report", 5)] == [c.id for c in report[:5]]


def test_wilson_intervals():
    assert wilson(0, 10) == pytest.approx((0.0, 0.2775), abs=1e-4)
    assert wilson(5, 10) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    assert wilson(50, 50) == pytest.approx((0.9287, 1.0), abs=1e-4)
    assert wilson(0, 0) == (0.0, 1.0)


def test_the_command_writes_the_documented_report(tmp_path):
    cases = [*load_cases("simple_python", "report", 2), *load_cases("irrelevance", "report", 2)]
    out, log = tmp_path / "out.json", tmp_path / "cases.jsonl"
    with FakeServer(Oracle(cases, "expected"), flavor="llama.cpp", context_window=16384,
                    models=(MODEL,)) as server:
        code = bfcl_cli.main(["--model-url", server.url, "--model", MODEL, "--categories",
                              "simple_python,irrelevance", "--limit", "2", "--json", str(out),
                              "--log", str(log)])
    assert code == 0
    report = json.loads(out.read_text())
    assert report["model"] == MODEL and report["engine"]
    assert set(report["categories"]) == {"simple_python", "irrelevance"}
    for row in report["categories"].values():
        assert row["n"] == 2
        for name in METHODS:
            assert row[name] == 1.0
            assert row["ci95"][name] == pytest.approx(list(wilson(2, 2)), abs=1e-4)
            assert row["median_s"][name] >= 0
    assert report["overall"] == {name: 1.0 for name in METHODS}
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(lines) == 4 * len(METHODS) and all(line["passed"] for line in lines)


def test_the_engine_uses_every_core_unless_told(monkeypatch, tmp_path):
    monkeypatch.setattr(bfcl_cli.os, "cpu_count", lambda: 6)
    gguf = str(tmp_path / "m.gguf")
    assert bfcl_cli.parse_args(["--gguf", gguf]).threads == 6
    assert bfcl_cli.parse_args(["--gguf", gguf, "--threads", "1"]).threads == 1
    monkeypatch.setattr(bfcl_cli.os, "cpu_count", lambda: None)
    assert bfcl_cli.parse_args(["--gguf", gguf]).threads == 1


def test_a_thread_count_below_one_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        bfcl_cli.parse_args(["--gguf", str(tmp_path / "m.gguf"), "--threads", "0"])
    assert stop.value.code == 2 and "--threads must be at least 1" in capsys.readouterr().err


def test_the_parity_bench_reaches_the_page_through_py_agents_bridge():
    """bench/bfcl_parity.py's page side is py_agent.rpc's BridgeModel over a transport
    that hands each request to the page's LLM host (CALL); the host's replies and errors
    come back as the worker would see them."""
    import asyncio

    from bench import bfcl_parity
    from py_agent.model import QuotaExceededError
    from py_agent.rpc import BridgeModel

    sent = []

    class Page:   # a Playwright page whose LLM host answers as web/llm_host.js does
        async def evaluate(self, script, arg):
            assert script == bfcl_parity.CALL
            method, args = arg
            sent.append(method)
            if method == "create":
                return {"ok": True, "value": {"sessionId": "s1", "contextWindow": 8192,
                                              "contextUsage": 12}}
            if args[1] == "too long":
                return {"ok": False, "error": {"name": "QuotaExceededError", "message": "no",
                                               "requested": 9000, "quota": 8192}}
            return {"ok": True, "value": {"text": '{"a": 1}', "contextUsage": 30,
                                          "contextWindow": 8192, "overflowed": False}}

    async def run():
        model = BridgeModel(bfcl_parity.page_transport(Page()))
        session = await model.create(initial_prompts=[{"role": "system", "content": "hi"}])
        assert await session.prompt("x", response_constraint={"type": "object"}) == '{"a": 1}'
        assert session.context_usage == 30 and model.context_window == 8192
        with pytest.raises(QuotaExceededError):
            await session.prompt("too long")

    asyncio.run(run())
    assert sent == ["create", "prompt", "prompt"]
