/* Nothing to configure: testdriver.js in this folder drives Playwright directly. */
