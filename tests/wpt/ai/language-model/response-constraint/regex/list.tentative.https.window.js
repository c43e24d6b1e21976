// META: title=Language Model Response Regex - List
// META: script=/resources/testdriver.js
// META: script=/resources/testdriver-vendor.js
// META: script=../../../resources/util.js
// META: timeout=long

'use strict';

promise_test(async t => {
  await ensureLanguageModel();
  const session = await createLanguageModel();
  const regex = /^\s*"[a-zA-Z]+"\s*(?:,\s*"[a-zA-Z]+"\s*)*$/;
  const response = await session.prompt(
      'Extract the names as a comma separated list from "I met John, Jane, and Jessie."',
      {responseConstraint: regex});
  assert_true(typeof response === 'string');
  assert_true(regex.test(response),
              `Response "${response}" should match regex ${regex}`);
}, 'Prompt should work with a list regex constraint.');
