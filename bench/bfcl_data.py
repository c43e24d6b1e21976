"""BFCL v4's cases and checker, from the ``bfcl-eval`` package, for ``bench/bfcl.py``.

The Berkeley Function Calling Leaderboard (Apache-2.0) ships its questions, function
docs, expected calls, answer checker and the Python backends of its multi-turn tasks in
the ``bfcl-eval`` package on PyPI. Its declared dependencies include every hosted
model's SDK and ``sentence-transformers`` (so PyTorch), none of which the parts used here
import, so it is installed without them (``pip install --no-deps bfcl-eval``, plus the
few small packages those parts import; ``run_tests.py`` does it).

Two things are worked around, both at import:

- the package writes result folders beside itself when imported: they go to a scratch
  folder instead (``BFCL_PROJECT_ROOT``);
- the AST checker imports the table of hosted models (and so every SDK) only to ask
  whether a model's function names had their dots replaced: a stand-in table answers
  "no" for every model, and the methods here map names back to BFCL's own before the
  check.

Cases are split into a tune half and a report half by a hash of their id (the same
hash as ``bench/make_bfcl_set.py``'s retrieval sets), and ordered within a half by the
whole hash, so ``--limit N`` always takes the same N.
"""

from __future__ import annotations

import copy
import hashlib
import os
import re
import sys
import tempfile
import types
from dataclasses import dataclass, field
from typing import Any

BFCL_EVAL_VERSION = "2026.3.23"
# Single-turn categories checked by BFCL's AST checker; irrelevance passes with no call.
AST_CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple",
                  "live_simple", "live_multiple", "live_parallel", "live_parallel_multiple")
IRRELEVANCE_CATEGORIES = ("irrelevance", "live_irrelevance")
MULTI_TURN_CATEGORIES = ("multi_turn_base",)
DEFAULT_CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple",
                      "irrelevance", "live_simple", "live_multiple", "live_irrelevance",
                      "multi_turn_base")
CATEGORIES = (*AST_CATEGORIES, *IRRELEVANCE_CATEGORIES, *MULTI_TURN_CATEGORIES)


class BfclUnavailableError(RuntimeError):
    """``bfcl-eval`` is missing or not the version these scripts were written for."""


_bfcl: types.SimpleNamespace | None = None


def bfcl() -> types.SimpleNamespace:
    """BFCL's modules, imported once (see the module doc for the two workarounds)."""
    global _bfcl
    if _bfcl is not None:
        return _bfcl
    if "BFCL_PROJECT_ROOT" not in os.environ:
        os.environ["BFCL_PROJECT_ROOT"] = tempfile.mkdtemp(prefix="bfcl-eval-")
    if "bfcl_eval.constants.model_config" not in sys.modules:
        stand_in = types.ModuleType("bfcl_eval.constants.model_config")
        stand_in.MODEL_CONFIG_MAPPING = _NoDotsReplaced()  # type: ignore[attr-defined]
        sys.modules["bfcl_eval.constants.model_config"] = stand_in
    try:
        from importlib.metadata import version

        from bfcl_eval import utils
        from bfcl_eval.constants import default_prompts, enums, type_mappings
        from bfcl_eval.eval_checker.ast_eval import ast_checker
        from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_checker, multi_turn_utils
        from bfcl_eval.model_handler import utils as handler_utils
    except ImportError as exc:
        raise BfclUnavailableError(
            f"BFCL's package is needed ({exc}): pip install --no-deps "
            f"bfcl-eval=={BFCL_EVAL_VERSION} tree_sitter==0.21.3 tree-sitter-java==0.21.0 "
            "tree-sitter-javascript==0.21.4 tenacity filelock overrides "
            "(python run_tests.py installs them in .venv)") from None
    found = version("bfcl-eval")
    if found != BFCL_EVAL_VERSION:
        raise BfclUnavailableError(f"bfcl-eval {found} is installed; these scripts read "
                                   f"{BFCL_EVAL_VERSION}")
    _bfcl = types.SimpleNamespace(
        version=found, utils=utils, prompts=default_prompts, enums=enums,
        types=type_mappings, ast=ast_checker, multi_turn=multi_turn_checker,
        execution=multi_turn_utils, handler=handler_utils)
    return _bfcl


class _NoDotsReplaced(dict):
    """The stand-in for BFCL's model table: no model had dots replaced in names."""

    def __missing__(self, key: str) -> types.SimpleNamespace:
        return types.SimpleNamespace(underscore_to_dot=False)


# ------------------------------------------------------------------------ cases

def digest(case_id: str) -> bytes:
    return hashlib.sha1(case_id.encode()).digest()


def half_of(case_id: str) -> str:
    """``tune`` or ``report``, fixed by the id (as bench/make_bfcl_set.py splits)."""
    return "tune" if digest(case_id)[0] % 2 == 0 else "report"


@dataclass
class Case:
    """One BFCL test entry: its turns, its functions and what a right answer is."""

    id: str
    category: str
    turns: list[list[dict[str, str]]]
    functions: list[dict[str, Any]]
    # AST categories: BFCL's possible answers ([{name: {param: [acceptable values]}}]);
    # multi-turn: the expected call strings per turn; irrelevance: None.
    answer: Any = None
    entry: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def kind(self) -> str:
        if self.category in IRRELEVANCE_CATEGORIES:
            return "irrelevance"
        return "multi_turn" if self.category in MULTI_TURN_CATEGORIES else "ast"


def load_cases(category: str, half: str | None = "report", limit: int | None = None
               ) -> list[Case]:
    """The category's cases in ``half`` (None: both), in hash order, at most ``limit``."""
    if category not in CATEGORIES:
        raise ValueError(f"unknown BFCL category {category!r}; known: {', '.join(CATEGORIES)}")
    b = bfcl()
    entries = b.utils.load_dataset_entry(category)
    answers: dict[str, Any] = {}
    if category not in IRRELEVANCE_CATEGORIES:
        answers = {a["id"]: a["ground_truth"] for a in b.utils.load_ground_truth_entry(category)}
    chosen = [e for e in entries if half is None or half_of(e["id"]) == half]
    chosen.sort(key=lambda e: digest(e["id"]))
    if limit is not None:
        chosen = chosen[:limit]
    return [Case(id=e["id"], category=category, turns=copy.deepcopy(e["question"]),
                 functions=copy.deepcopy(e["function"]), answer=answers.get(e["id"]),
                 entry=e) for e in chosen]


# ------------------------------------------------------------------ function docs

def openai_tools(functions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """BFCL's function docs as chat-completions ``tools``, converted by BFCL's own helper
    for OpenAI-style servers (its types "dict", "float", "tuple", "any" become JSON
    Schema's; dots in names become underscores)."""
    b = bfcl()
    return b.handler.convert_to_tool(functions, b.types.GORILLA_TO_OPENAPI,
                                     b.enums.ModelStyle.OPENAI_COMPLETIONS)


def name_map(functions: list[dict[str, Any]]) -> dict[str, str]:
    """Each function's name as the tools give it (dots replaced) → BFCL's own name."""
    return {re.sub(r"\.", "_", f["name"]): f["name"] for f in functions}


# ------------------------------------------------------------------------- calls

Call = tuple[str, dict[str, Any]]


def call_string(name: str, arguments: dict[str, Any]) -> str:
    """A call as BFCL's multi-turn backends execute it: ``name(a=1,b='x')``."""
    return BFCL_CALL.format(name=name, args=",".join(f"{k}={v!r}" for k, v in arguments.items()))


BFCL_CALL = "{name}({args})"


def parse_call_string(text: str) -> Call:
    """``cd(folder='x')`` → ("cd", {"folder": "x"}), with positional arguments named by
    position as ``_0``, ``_1`` (BFCL's answers use a few)."""
    import ast
    node = ast.parse(text.strip(), mode="eval").body
    if not isinstance(node, ast.Call):
        raise ValueError(f"not a call: {text!r}")
    name = ast.unparse(node.func)
    arguments = {f"_{i}": ast.literal_eval(a) for i, a in enumerate(node.args)}
    arguments.update({k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg})
    return name, arguments
