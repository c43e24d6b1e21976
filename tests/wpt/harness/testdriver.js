/*
 * The part of WPT's test_driver that the Prompt API tests use, driven by Playwright.
 *
 * bless() needs a real user gesture (LanguageModel.create() checks user activation), so
 * it puts a button on the page and asks the runner, through the binding
 * window.__wptClick that tests/wpt/runner.py exposes in every frame, to click it with
 * Playwright's trusted input; the action runs in the click handler, while the
 * activation is transient. This project's own file, standing in for WPT's testdriver.js
 * and its WebDriver backend.
 */
(() => {
  'use strict';
  let nextButton = 1;

  window.test_driver = {
    /** Frames of another origin call this with their parent; clicks happen in the caller's frame anyway. */
    set_test_context(_context) {},

    bless(intent, action, context = window) {
      return new Promise((resolve, reject) => {
        const doc = context.document;
        const button = doc.createElement('button');
        button.id = `wpt-bless-${nextButton++}`;
        button.textContent = intent || 'Activate';
        button.style.cssText = 'position:fixed;left:0;top:0;z-index:2147483647';
        button.addEventListener('click', () => {
          button.remove();
          try { resolve(typeof action === 'function' ? action() : undefined); } catch (e) { reject(e); }
        }, { once: true });
        (doc.body || doc.documentElement).appendChild(button);
        if (typeof context.__wptClick !== 'function') {
          reject(new Error('test_driver.bless: the runner exposed no __wptClick binding in this frame'));
          return;
        }
        context.__wptClick(button.id).catch(reject);
      });
    },
  };
})();
