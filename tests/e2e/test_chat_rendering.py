"""The chat as people use it: answers rendered as safe Markdown, injected markup kept
inert (in answers, streamed previews and tool output), the composer's keys, Retry on a
failed turn, auto-scroll that leaves a user who scrolled up alone, and the screen
reader announcement of each answer.

Note: the page's Content-Security-Policy would already stop an inline onerror or
<script> from running, so `window.__pwned` staying undefined is not enough on its own;
these tests also watch the DOM for any element made from model or tool text.
"""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.pages import (ASSISTANT, TURN_TIMEOUT_MS, USER, boot, chat, failed_turn, send,
                             step_responder)

pytestmark = pytest.mark.e2e


def answering(answer_js: str) -> str:
    """A responder whose step replies answer directly with the JS expression
    ``answer_js`` (it sees ``input``, the prompt text); everything else gets the fake's
    defaults."""
    return step_responder("return step({thought: 'Answering.', finalAnswer: %s});" % answer_js)


# Records every element added to the page's chat that model or tool text could have
# made (an element such as img or script, or a link that is not http(s)), and every
# announcement of the live region; the observers stop when a shared page is handed on
# (window.__e2eTeardown, tests/e2e/shared_chat.py).
WATCH_DOM = r"""() => {
  window.__bad = [];
  window.__announcements = [];
  const risky = (node) => {
    if (node.nodeType !== 1) return;
    for (const el of [node, ...node.querySelectorAll('*')]) {
      const tag = el.tagName.toLowerCase();
      if (['img', 'script', 'iframe', 'object', 'embed', 'svg', 'b', 'style'].includes(tag)) {
        window.__bad.push(tag);
      }
      if (tag === 'a' && !/^https?:\/\//i.test(el.getAttribute('href') || '')) {
        window.__bad.push('a ' + el.getAttribute('href'));
      }
      for (const attr of el.getAttributeNames()) {
        if (attr.startsWith('on')) window.__bad.push(tag + ' ' + attr);
      }
    }
  };
  const added = new MutationObserver((records) => {
    for (const r of records) r.addedNodes.forEach(risky);
  });
  added.observe(document.querySelector('.layout'), {childList: true, subtree: true});
  const live = document.querySelector('[data-testid="answer-announcer"]');
  const announced = new MutationObserver(() => window.__announcements.push(live.textContent));
  announced.observe(live, {childList: true, subtree: true, characterData: true});
  (window.__e2eTeardown = window.__e2eTeardown || []).push(
    () => { added.disconnect(); announced.disconnect(); });
}"""


def open_streaming_chat(shared_chat, answer: str, chunk_delay_ms: int):
    """The chat with a model that answers every message with ``answer``, streamed a word
    every ``chunk_delay_ms``, and WATCH_DOM recording; the page and its Watch."""
    page, watch = shared_chat.open(responderSource=answering(json.dumps(answer)))
    page.evaluate(WATCH_DOM)
    page.evaluate("__fakeLM.setChunkDelay(%d)" % chunk_delay_ms)
    return page, watch


# ------------------------------------------------------------------ Markdown

MARKDOWN = """## Plan for *tonight*

Here is **bold**, *italic*, `x < y` and a [safe link](https://example.com/docs?q=1).
A second line, and snake_case_names stay as they are.

- first item
- second **item**
  - nested item

3. three
4. four

```python
print("<b>not bold</b>")
```

[bad](javascript:window.__pwned=1) and [data](data:text/html,<script>alert(1)</script>) and <b>raw</b>

> quoted

| name | value |
|---|--:|
| a | 1 |"""


def check_markdown(answer) -> None:
    text = answer.locator(".text")
    expect(text).to_have_class(re.compile(r"\bmarkdown\b"))
    heading = text.locator("h4")
    expect(heading).to_have_text("Plan for tonight")
    expect(heading.locator("em")).to_have_text("tonight")
    paragraph = text.locator("> p").first
    expect(paragraph.locator("strong")).to_have_text("bold")
    expect(paragraph.locator("em")).to_have_text("italic")
    expect(paragraph.locator("code")).to_have_text("x < y")
    expect(paragraph.locator("br")).to_have_count(1)
    expect(paragraph).to_contain_text("snake_case_names stay")
    link = text.locator("a")
    expect(link).to_have_count(1)
    expect(link).to_have_text("safe link")
    expect(link).to_have_attribute("href", "https://example.com/docs?q=1")
    expect(link).to_have_attribute("rel", "noopener noreferrer")
    expect(link).to_have_attribute("target", "_blank")
    bullets = text.locator("> ul > li")
    expect(bullets).to_have_count(2)
    expect(bullets.nth(1).locator("> strong")).to_have_text("item")
    expect(bullets.nth(1).locator("ul > li")).to_have_text("nested item")
    numbered = text.locator("> ol")
    expect(numbered).to_have_attribute("start", "3")
    expect(numbered.locator("li")).to_have_text(["three", "four"])
    code = text.locator("pre > code")
    expect(code).to_have_text('print("<b>not bold</b>")')
    expect(text.locator("pre")).to_have_attribute("data-lang", "python")
    # Links other than http(s) and raw HTML stay literal text.
    expect(text).to_contain_text("[bad](javascript:window.__pwned=1)")
    expect(text).to_contain_text("[data](data:text/html,<script>alert(1)</script>)")
    expect(text).to_contain_text("<b>raw</b>")
    expect(text.locator("blockquote")).to_have_text("quoted")
    expect(text.locator("th")).to_have_text(["name", "value"])
    expect(text.locator("td").last).to_have_text("1")
    expect(text.locator("td").last).to_have_attribute("data-align", "right")
    assert text.locator("b, script, img, iframe").count() == 0


def test_answers_render_as_safe_markdown(shared_chat, app_server: str) -> None:
    page, watch = open_streaming_chat(shared_chat, MARKDOWN, 25)
    send(page, "Show me **everything** you can format, <i>please</i>")
    answer = page.locator(ASSISTANT).last
    # The streamed preview is rendered as it comes in, already as Markdown.
    expect(answer.locator(".text strong").first).to_have_text("bold", timeout=TURN_TIMEOUT_MS)
    assert answer.get_attribute("data-state") == "pending"
    expect(answer).to_have_attribute("data-state", "answered", timeout=TURN_TIMEOUT_MS)
    check_markdown(answer)
    # The user's own message stays plain text.
    user = page.locator(USER).last.locator(".text")
    expect(user).to_have_text("Show me **everything** you can format, <i>please</i>")
    assert user.locator("*").count() == 0

    # A past turn, read back from IndexedDB after a reload, renders the same way.
    boot(page, app_server + "/")
    check_markdown(page.locator(ASSISTANT).last)
    assert page.locator(USER).last.locator(".text *").count() == 0
    assert page.evaluate("window.__pwned") is None
    assert watch.problems == []


# ------------------------------------------------------------------ injection

PAYLOAD = ('Look: <img src=x onerror="window.__pwned=1"> then '
           '<script>window.__pwned=1</script> and [click](javascript:window.__pwned=1) done.')


def test_injected_markup_in_answers_stays_text(shared_chat) -> None:
    page, watch = open_streaming_chat(shared_chat, PAYLOAD, 250)
    send(page, "Say something dangerous")
    answer = page.locator(ASSISTANT).last
    text = answer.locator(".text")
    # Mid-stream: the preview already shows the markup as text.
    expect(text).to_contain_text('<img src=x onerror="window.__pwned=1">',
                                 timeout=TURN_TIMEOUT_MS)
    assert answer.get_attribute("data-state") == "pending"
    assert text.locator("img, script, a").count() == 0
    expect(answer).to_have_attribute("data-state", "answered", timeout=TURN_TIMEOUT_MS)
    expect(text).to_have_text(PAYLOAD)
    assert text.locator("*:not(p)").count() == 0
    assert page.locator('[data-testid="messages"] img, [data-testid="messages"] script') \
        .count() == 0
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("window.__bad") == []

    # The finished answer is announced once to screen readers, not chunk by chunk.
    announcer = page.get_by_test_id("answer-announcer")
    expect(announcer).to_have_text("Agent: " + PAYLOAD)
    expect(announcer).to_have_attribute("aria-live", "polite")
    assert page.evaluate("window.__announcements") == ["Agent: " + PAYLOAD]
    assert page.get_by_test_id("messages").get_attribute("aria-live") is None
    assert watch.problems == []


# ------------------------------------------------------------------ composer

def test_enter_sends_and_shift_enter_adds_a_line(shared_chat) -> None:
    page, watch = shared_chat.open()
    box = page.get_by_test_id("chat-input")
    box.click()
    box.press_sequentially("first line")
    box.press("Shift+Enter")
    box.press_sequentially("second line")
    expect(box).to_have_value("first line\nsecond line")
    expect(page.locator(USER)).to_have_count(0)
    box.press("Enter")
    expect(page.locator(USER)).to_have_count(1)
    expect(box).to_have_value("")
    assert page.locator(USER).locator(".text").text_content() == "first line\nsecond line"
    expect(page.locator(ASSISTANT)).to_have_attribute("data-state", "answered",
                                                      timeout=TURN_TIMEOUT_MS)

    # While a turn runs, Enter sends nothing and keeps the text; Stop is offered.
    page.evaluate("__fakeLM.setLatency(1500)")
    send(page, "A slow one")
    expect(page.get_by_test_id("stop-button")).to_be_enabled()
    expect(page.get_by_test_id("stop-button")).to_have_accessible_name("Stop")
    box.fill("typed meanwhile")
    box.press("Enter")
    expect(page.locator(USER)).to_have_count(2)
    expect(box).to_have_value("typed meanwhile")
    expect(page.locator(ASSISTANT).last).to_have_attribute("data-state", "answered",
                                                           timeout=TURN_TIMEOUT_MS)
    page.evaluate("__fakeLM.setLatency(0)")
    box.press("Enter")
    expect(page.locator(USER)).to_have_count(3)
    expect(page.locator(USER).last.locator(".text")).to_have_text("typed meanwhile")
    assert watch.problems == []


# ------------------------------------------------------------------ retry

def test_failed_turn_offers_retry(shared_chat, app_server: str) -> None:
    page, _ = shared_chat.open()
    page.evaluate(WATCH_DOM)
    failed = failed_turn(page, "Will this work?")
    retry = failed.get_by_test_id("retry-button")
    expect(retry).to_be_visible()
    expect(retry).to_be_enabled()
    expect(retry).to_have_accessible_name("Retry: Will this work?")
    expect(page.get_by_test_id("chat-input")).to_have_value("")
    expect(page.get_by_test_id("answer-announcer")).to_contain_text("Agent, error:")

    # Disabled while another turn runs.
    page.evaluate("__fakeLM.setLatency(1500)")
    send(page, "Something else meanwhile")
    expect(retry).to_be_disabled()
    expect(page.locator(ASSISTANT).last).to_have_attribute("data-state", "answered",
                                                           timeout=TURN_TIMEOUT_MS)
    expect(retry).to_be_enabled()
    page.evaluate("__fakeLM.setLatency(0)")

    # Retry sends the same message again as a new turn, which now succeeds.
    retry.click()
    expect(page.locator(USER)).to_have_count(3)
    expect(page.locator(USER).last.locator(".text")).to_have_text("Will this work?")
    expect(page.locator(ASSISTANT).last).to_have_attribute("data-state", "answered",
                                                           timeout=TURN_TIMEOUT_MS)
    expect(page.locator(ASSISTANT).last.locator(".text")).to_have_text(
        "You said: Will this work?")
    expect(failed.get_by_test_id("retry-button")).to_have_count(0)
    expect(failed).to_have_attribute("data-retried", "true")
    expect(failed).to_have_attribute("data-state", "error")

    # After a reload the failed turn still offers its Retry.
    boot(page, app_server + "/")
    expect(page.locator(ASSISTANT).first).to_have_attribute("data-state", "error")
    expect(page.locator(ASSISTANT).first.get_by_test_id("retry-button")).to_be_enabled()


# ------------------------------------------------------------------ auto-scroll

# Long answers (many lines), streamed word by word.
LONG_ANSWER = "\n\n".join("Paragraph %d of a long answer that goes on." % n for n in range(1, 31))


def scroll_state(page: Page) -> dict:
    return page.evaluate("""() => {
      const list = document.querySelector('[data-testid="messages"]');
      const pane = ['auto', 'scroll'].includes(getComputedStyle(list).overflowY);
      const composer = document.querySelector('[data-testid="composer"]');
      return {pane, top: pane ? list.scrollTop : window.scrollY,
              gap: pane ? list.scrollHeight - list.scrollTop - list.clientHeight
                        : list.getBoundingClientRect().bottom
                          - composer.getBoundingClientRect().top};
    }""")


def scroll_up(page: Page) -> None:
    page.evaluate("""() => {
      const list = document.querySelector('[data-testid="messages"]');
      if (['auto', 'scroll'].includes(getComputedStyle(list).overflowY)) list.scrollTop = 200;
      else window.scrollTo(0, 200);
    }""")


def in_view(page: Page) -> dict:
    """The message in the middle of the chat's visible part, and where it is on screen."""
    return page.evaluate("""() => {
      const list = document.querySelector('[data-testid="messages"]');
      const box = list.getBoundingClientRect();
      const y = (Math.max(box.top, 0) + Math.min(box.bottom, innerHeight)) / 2;
      const node = document.elementFromPoint(box.left + 20, y).closest('[data-testid="message"]');
      return {index: [...list.children].indexOf(node),
              top: Math.round(node.getBoundingClientRect().top)};
    }""")


def stream_while_scrolled_up(page: Page, expect_pane: bool) -> None:
    jump = page.get_by_test_id("jump-latest")
    send(page, "Tell me a long story")
    answer = page.locator(ASSISTANT).last
    expect(answer.locator(".text")).to_contain_text("Paragraph 2", timeout=TURN_TIMEOUT_MS)
    # Following the stream while at the bottom.
    state = scroll_state(page)
    assert state["pane"] is expect_pane
    assert state["gap"] <= 48, state
    expect(jump).to_be_hidden()

    # The reader scrolls up: what they read stays where it is while the answer grows.
    scroll_up(page)
    page.wait_for_timeout(100)
    top = scroll_state(page)["top"]
    assert top == 200
    seen = in_view(page)
    expect(answer.locator(".text")).to_contain_text("Paragraph 12", timeout=TURN_TIMEOUT_MS)
    assert answer.get_attribute("data-state") == "pending"
    expect(jump).to_be_visible()
    assert in_view(page) == seen
    expect(answer).to_have_attribute("data-state", "answered", timeout=TURN_TIMEOUT_MS)
    assert in_view(page) == seen
    if expect_pane:
        assert scroll_state(page)["top"] == top
    expect(jump).to_be_visible()

    jump.click()
    expect(jump).to_be_hidden()
    assert scroll_state(page)["gap"] <= 48


def test_auto_scroll_leaves_a_reader_alone(shared_chat) -> None:
    page, watch = shared_chat.open(responderSource=answering(json.dumps(LONG_ANSWER)))
    # A long conversation first.
    for n in range(3):
        chat(page, "Tell me more, part %d" % n)
    state = scroll_state(page)
    assert state["pane"] is True      # wide screen: the messages scroll in their own pane
    assert state["gap"] <= 48
    assert page.evaluate("scrollY") == 0

    page.evaluate("__fakeLM.setChunkDelay(25)")
    stream_while_scrolled_up(page, expect_pane=True)
    # Scrolling back down by hand hides the button too.
    send(page, "And another")
    answer = page.locator(ASSISTANT).last
    expect(answer.locator(".text")).to_contain_text("Paragraph 2", timeout=TURN_TIMEOUT_MS)
    scroll_up(page)
    expect(page.get_by_test_id("jump-latest")).to_be_visible(timeout=TURN_TIMEOUT_MS)
    page.evaluate("""() => { const l = document.querySelector('[data-testid="messages"]');
                             l.scrollTop = l.scrollHeight; }""")
    expect(page.get_by_test_id("jump-latest")).to_be_hidden()
    expect(answer).to_have_attribute("data-state", "answered", timeout=TURN_TIMEOUT_MS)

    # A phone: the page itself scrolls, and the same rules hold.
    page.set_viewport_size({"width": 390, "height": 740})
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    stream_while_scrolled_up(page, expect_pane=False)
    assert watch.problems == []
