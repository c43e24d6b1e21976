"""The fake LanguageModel is held to the Prompt API's own web-platform-tests.

Every vendored test file (tests/wpt, see SOURCE.md there) runs in Chromium with the fake
installed as every e2e test installs it (tests/wpt/runner.py). Each subtest must pass or
be in the one exclusion list, tests/wpt/expectations.toml, with its kind and reason; an
excluded subtest that passes must leave the list. Of the subtests that check
spec-required behaviour, at least 95% pass.
"""

from __future__ import annotations

import pytest

from tests.e2e.conftest import CHROMIUM_FLAGS
from tests.wpt.runner import (EXTRA_FLAGS, PASS, load_expectations, run_all, table, tally,
                              wpt_files)

pytestmark = pytest.mark.e2e

FILES = wpt_files()
MIN_SPEC_PASS_RATE = 0.95


@pytest.fixture(scope="module")
def expectations():
    return load_expectations()


@pytest.fixture(scope="module")
def wpt_results(browser_type, browser_type_launch_args, expectations):
    """Every file's results, run once for the module in a browser of its own (gc()
    exposed, as WPT's Chrome runner does)."""
    browser = browser_type.launch(**{**browser_type_launch_args,
                                     "args": [*CHROMIUM_FLAGS, *EXTRA_FLAGS]})
    try:
        return {result.path: result for result in run_all(browser, expectations)}
    finally:
        browser.close()


def test_the_vendored_files_are_found():
    assert len(FILES) >= 80
    assert "ai/language-model/language-model-iframe.tentative.https.html" in FILES
    assert not any("/resources/" in path for path in FILES)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.removeprefix("ai/language-model/"))
def test_every_subtest_passes_or_is_excluded(path, wpt_results, expectations):
    result = wpt_results[path]
    assert result.harness == "OK", f"{path}: harness {result.harness}: {result.message}"
    assert result.subtests, f"{path} ran no subtest"
    unexplained = {name: (status, message) for name, (status, message) in result.subtests.items()
                   if status != PASS and (path, name) not in expectations.exclusions}
    assert not unexplained, f"{path}: failing and not in expectations.toml: {unexplained}"
    stale = [name for (file, name) in expectations.exclusions
             if file == path and result.subtests.get(name, (None,))[0] == PASS]
    assert not stale, f"{path}: excluded but passing, remove from expectations.toml: {stale}"


def test_every_exclusion_names_a_real_subtest(wpt_results, expectations):
    unknown = [(file, name) for (file, name) in expectations.exclusions
               if file not in wpt_results or name not in wpt_results[file].subtests]
    assert not unknown


def test_spec_required_subtests_pass(wpt_results, expectations):
    rows = tally(wpt_results, expectations)
    print("\n" + table(rows))
    passed, total = sum(r.spec_passed for r in rows), sum(r.spec_total for r in rows)
    assert total >= 100, "the spec-required subset shrank: check expectations.toml"
    assert passed / total >= MIN_SPEC_PASS_RATE, table(rows)
