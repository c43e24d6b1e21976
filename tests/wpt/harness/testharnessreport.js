/*
 * Hands every subtest result to the Playwright runner (tests/wpt/runner.py): once the
 * harness completes, window.__wptReport holds {done, harness, tests: [{name, status,
 * message}]}. This project's own file, standing in for WPT's testharnessreport.js,
 * which reports to wptrunner instead.
 */
(() => {
  'use strict';
  const report = { done: false, harness: null, tests: [] };
  window.__wptReport = report;
  add_completion_callback((tests, harness) => {
    report.tests = tests.map((t) => ({ name: t.name, status: t.format_status(), message: t.message ?? null }));
    report.harness = { status: harness.format_status(), message: harness.message ?? null };
    report.done = true;
  });
})();
