"""The JavaScript reply table (web/replies.js) in a real page and a real module worker:
ids, replies matched by id, a timeout per request, abort, per-request events, and close
that never waits. No agent boots here: the module is imported into an empty page."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e

SCENARIO = r"""async () => {
  const {Replies, withDeadline} = await import('/web/replies.js');
  const out = {};
  const sent = [];
  const settle = (promise) => promise.then((value) => ({value}),
                                           (error) => ({name: error.name, message: error.message}));

  // Ids, and replies in another order than the requests.
  const table = new Replies({prefix: 'agent', timeoutMs: 5000});
  const first = settle(table.request((id) => sent.push(id)));
  const second = settle(table.request((id) => sent.push(id), {onEvent: (m) => sent.push(m.note)}));
  out.waiting = table.size;
  out.evented = table.event('agent2', {note: 'progress'});
  out.settled = [table.settle({id: 'agent2', ok: true, value: 'two'}),
                 table.settle({id: 'agent1', ok: false, error: {name: 'UnknownSessionError', message: 'no s'}}),
                 table.settle({id: 'agent1', ok: true, value: 'again'}),
                 table.settle({id: 'nobody', ok: true})];
  out.replies = [await first, await second];
  out.sent = sent.slice();

  // A timeout: onTimeout runs, a TimeoutError names the request, a late reply finds nothing.
  let timedOut = 0;
  const started = performance.now();
  out.timeout = await settle(table.request(() => {}, {timeoutMs: 50, what: "the agent's run request",
                                                      onTimeout: () => { timedOut += 1; }}));
  out.timeoutMs = performance.now() - started;
  out.timedOut = timedOut;
  out.late = table.settle({id: 'agent3', ok: true, value: 'late'});

  // An abort: onAbort tells the other side, the request rejects with the signal's reason.
  const controller = new AbortController();
  let aborts = 0;
  const aborting = settle(table.request(() => {}, {timeoutMs: null, signal: controller.signal,
                                                   onAbort: () => { aborts += 1; }}));
  controller.abort(new DOMException('Stopped by the user.', 'AbortError'));
  out.aborted = await aborting;
  out.aborts = aborts;
  out.alreadyAborted = await settle(table.request(() => { throw new Error('sent'); },
                                                  {signal: controller.signal}));

  // A send that throws rejects with its error and leaves nothing waiting.
  out.sendFailed = await settle(table.request(() => { throw new Error('the port is gone'); }));

  // close(): every waiting request rejects at once, and every later one.
  const waiting = [1, 2].map(() => settle(table.request(() => {}, {timeoutMs: 60000})));
  const closing = performance.now();
  table.close(new Error('the agent was closed'));
  out.closed = await Promise.all(waiting);
  out.closeMs = performance.now() - closing;
  out.afterClose = await settle(table.request(() => { throw new Error('sent'); }));
  out.sizeAtEnd = table.size;

  // withDeadline, for a wait that is not a request.
  out.deadline = await settle(withDeadline(new Promise(() => {}), 30, 'starting the agent'));
  out.inTime = await settle(withDeadline(Promise.resolve('ready'), 1000, 'starting the agent'));

  // A module worker imports the same module.
  const source = `
    const {Replies} = await import(${JSON.stringify(location.origin + '/web/replies.js')});
    const table = new Replies({prefix: 'w'});
    const reply = table.request((id) => self.postMessage({type: 'sent', id}));
    self.onmessage = ({data}) => table.settle(data);
    self.postMessage({type: 'answer', value: await reply});`;
  const url = URL.createObjectURL(new Blob([source], {type: 'text/javascript'}));
  const worker = new Worker(url, {type: 'module'});
  out.worker = await new Promise((resolve, reject) => {
    worker.onerror = (event) => reject(new Error(event.message));
    worker.onmessage = ({data}) => {
      if (data.type === 'sent') worker.postMessage({id: data.id, ok: true, value: `answered ${data.id}`});
      else resolve(data.value);
    };
  });
  worker.terminate();
  return out;
}"""


def test_replies_match_time_out_abort_and_close(page, blank_url):
    page.goto(blank_url)
    out = page.evaluate(SCENARIO)
    assert out["waiting"] == 2 and out["evented"] is True
    assert out["settled"] == [True, True, False, False]
    assert out["replies"] == [{"name": "UnknownSessionError", "message": "no s"},
                              {"value": "two"}]
    assert out["sent"] == ["agent1", "agent2", "progress"]

    assert out["timeout"] == {"name": "TimeoutError",
                              "message": "the agent's run request took longer than 0 s"}
    assert out["timedOut"] == 1 and out["timeoutMs"] < 1000 and out["late"] is False

    assert out["aborted"] == {"name": "AbortError", "message": "Stopped by the user."}
    assert out["aborts"] == 1
    assert out["alreadyAborted"]["name"] == "AbortError"    # never sent
    assert out["sendFailed"] == {"name": "Error", "message": "the port is gone"}

    assert out["closed"] == [{"name": "Error", "message": "the agent was closed"}] * 2
    assert out["closeMs"] < 100
    assert out["afterClose"] == {"name": "Error", "message": "the agent was closed"}
    assert out["sizeAtEnd"] == 0

    assert out["deadline"]["name"] == "TimeoutError"
    assert out["inTime"] == {"value": "ready"}
    assert out["worker"] == "answered w1"
