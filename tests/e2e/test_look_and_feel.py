"""Look and feel: phone widths, light and dark themes with readable contrast, keyboard
use from the first Tab, and names for every control and landmark.

Runs the real page (serve.py's server) with the fake LanguageModel; nothing here names
the demo's tools or the sidebar's exact controls beyond their test ids, so the panels
can grow without breaking these checks.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.pages import ASSISTANT, TURN_TIMEOUT_MS, boot, chat, open_chat

pytestmark = pytest.mark.e2e

PHONE = {"width": 360, "height": 740}
# Every visible text (and ::before/::after text, and placeholders) against what is
# really behind it, opacity included; disabled controls are exempt (WCAG 1.4.3).
CONTRAST_JS = r"""() => {
  const parse = (c) => {
    const m = /rgba?\(([^)]+)\)/.exec(c);
    if (!m) return null;
    const p = m[1].split(/[\s,\/]+/).filter(Boolean).map(Number);
    return {r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1};
  };
  const lum = ({r, g, b}) => {
    const f = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const blend = (top, bottom) => ({
    r: top.r * top.a + bottom.r * (1 - top.a), g: top.g * top.a + bottom.g * (1 - top.a),
    b: top.b * top.a + bottom.b * (1 - top.a), a: 1});
  const canvas = parse(getComputedStyle(document.documentElement).backgroundColor);
  const background = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c.a > 0) { layers.push(c); if (c.a >= 1) break; }
    }
    let bg = canvas && canvas.a > 0 ? {...canvas, a: 1} : {r: 255, g: 255, b: 255, a: 1};
    for (let i = layers.length - 1; i >= 0; i--) bg = blend(layers[i], bg);
    return bg;
  };
  const ratioOf = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
  const failures = [];
  let checked = 0;
  const check = (el, style, what) => {
    let opacity = 1;
    for (let e = el; e; e = e.parentElement) opacity *= Number(getComputedStyle(e).opacity);
    const bg = background(el);
    const fg0 = parse(style.color);
    if (!fg0) return;
    const fg = blend({...fg0, a: fg0.a * opacity}, bg);
    const ratio = ratioOf(fg, bg);
    const size = parseFloat(style.fontSize), bold = Number(style.fontWeight) >= 700;
    const needed = size >= 24 || (bold && size >= 18.66) ? 3 : 4.5;
    checked += 1;
    if (ratio < needed) {
      failures.push({what, ratio: Math.round(ratio * 100) / 100, color: style.color,
                     opacity, cls: String(el.className), testid: el.dataset.testid || null});
    }
  };
  for (const el of document.querySelectorAll('body *')) {
    if (!el.checkVisibility({visibilityProperty: true})) continue;
    if (el.closest(':disabled, [aria-disabled="true"], .visually-hidden')) continue;  // exempt
    const text = [...el.childNodes].filter((n) => n.nodeType === 3).map((n) => n.textContent).join('').trim();
    if (text) check(el, getComputedStyle(el), text.slice(0, 50));
    for (const pseudo of ['::before', '::after']) {
      const style = getComputedStyle(el, pseudo);
      const content = style.content;
      if (content && content !== 'none' && content !== 'normal' && /\w/.test(content)) {
        check(el, style, pseudo + ' ' + content.slice(0, 50));
      }
    }
    if (el.matches('textarea, input') && el.placeholder) {
      check(el, getComputedStyle(el, '::placeholder'), 'placeholder ' + el.placeholder.slice(0, 40));
    }
  }
  return {checked, failures};
}"""
# Roles of controls that need an accessible name.
CONTROL_ROLES = {"button", "textbox", "searchbox", "combobox", "checkbox", "radio", "switch",
                 "slider", "spinbutton", "link", "menuitem", "tab", "listbox"}


def horizontal_overflow(page: Page) -> list:
    """[scrollWidth, innerWidth] of the page, and whatever sticks out on the right."""
    return page.evaluate("""() => {
      const width = innerWidth;
      const wide = [...document.querySelectorAll('body *')]
        .filter((el) => el.checkVisibility() && el.getBoundingClientRect().right > width + 0.5)
        .map((el) => el.dataset.testid || el.className || el.tagName).slice(0, 10);
      return [document.scrollingElement.scrollWidth, width, wide];
    }""")


def assert_fits(page: Page) -> None:
    scroll_width, width, wide = horizontal_overflow(page)
    assert scroll_width <= width, (scroll_width, width, wide)


def in_viewport(page: Page, testid: str) -> bool:
    return page.get_by_test_id(testid).evaluate("""(el) => {
      const r = el.getBoundingClientRect();
      return r.width > 0 && r.top >= 0 && r.bottom <= innerHeight && r.left >= 0
             && r.right <= innerWidth;
    }""")


# ------------------------------------------------------------------------------ tests

def test_phone_width_fits_and_the_sidebar_is_a_drawer(page: Page, app_server: str,
                                                      install_fake_lm) -> None:
    page.set_viewport_size(PHONE)
    open_chat(page, app_server, install_fake_lm)
    assert_fits(page)
    expect(page.get_by_test_id("chat-input")).to_be_visible()
    assert in_viewport(page, "chat-input") and in_viewport(page, "send-button")
    # The sidebar waits in a drawer; the chat has the screen.
    expect(page.get_by_test_id("session-list")).to_be_hidden()

    # Long words, long answers and traces stay inside the screen.
    chat(page, "Please look at https://example.org/" + "a-very-long-path-segment" * 8
         + " and also " + "Supercalifragilistic" * 6)
    assert_fits(page)
    assert in_viewport(page, "chat-input")

    toggle = page.get_by_test_id("drawer-toggle")
    expect(toggle).to_have_attribute("aria-expanded", "false")
    toggle.click()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(page.get_by_test_id("session-list")).to_be_visible()
    expect(page.get_by_test_id("memory-panel")).to_be_visible()
    expect(page.get_by_test_id("drawer-close")).to_be_focused()
    assert_fits(page)
    # Under the drawer the chat is out of reach (inert) until it closes.
    assert page.evaluate("document.getElementById('main').inert") is True
    page.keyboard.press("Escape")
    expect(page.get_by_test_id("session-list")).to_be_hidden()
    expect(toggle).to_be_focused()
    assert page.evaluate("document.getElementById('main').inert") is False

    # Picking a session in the drawer closes it and shows that chat.
    toggle.click()
    page.get_by_test_id("new-session-button").click()
    expect(page.get_by_test_id("session-list")).to_be_hidden()
    expect(page.get_by_test_id("chat-input")).to_be_focused()
    assert_fits(page)


def test_phone_width_with_the_model_guide(page: Page, app_server: str,
                                         install_fake_lm) -> None:
    page.set_viewport_size(PHONE)
    install_fake_lm(page, availability="unavailable")
    boot(page, app_server + "/", wait_for_chat=False)
    expect(page.get_by_test_id("model-guide")).to_be_visible()
    assert_fits(page)
    expect(page.get_by_test_id("chat-input")).to_be_visible()


def test_dark_scheme_follows_the_system_with_readable_contrast(
        page: Page, app_server: str, install_fake_lm) -> None:
    page.emulate_media(color_scheme="light")
    open_chat(page, app_server, install_fake_lm)
    chat(page, "Hello in both themes")
    colors = {}
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        colors[scheme] = page.evaluate(
            "[getComputedStyle(document.body).backgroundColor,"
            " getComputedStyle(document.body).color]")
        result = page.evaluate(CONTRAST_JS)
        assert result["checked"] > 20
        assert result["failures"] == [], (scheme, result["failures"])
    assert colors["light"][0] != colors["dark"][0]
    assert colors["light"][1] != colors["dark"][1]
    assert colors["light"][0] == "rgb(255, 255, 255)"


def test_keyboard_reaches_every_part_in_order(page: Page, app_server: str,
                                             install_fake_lm) -> None:
    open_chat(page, app_server, install_fake_lm)
    # The first Tab shows the skip link; Enter puts the cursor in the message box.
    page.keyboard.press("Tab")
    skip = page.get_by_test_id("skip-link")
    expect(skip).to_be_focused()
    assert in_viewport(page, "skip-link")
    page.keyboard.press("Enter")
    chat_input = page.get_by_test_id("chat-input")
    expect(chat_input).to_be_focused()
    # A whole turn by keyboard (so the memory controls are in use too).
    page.keyboard.type("Remember that I like tea")
    page.keyboard.press("Enter")
    expect(page.locator(ASSISTANT).last).to_have_attribute("data-state", "answered",
                                                           timeout=TURN_TIMEOUT_MS)
    expect(page.get_by_test_id("compact-button")).to_be_enabled()
    expect(chat_input).to_be_focused()

    # From there on, Tab walks the chat, then the sidebar, with a visible ring each time.
    order = []
    for _ in range(60):
        page.keyboard.press("Tab")
        focused = page.evaluate("""() => {
          const el = document.activeElement;
          const style = getComputedStyle(el);
          return {id: el.dataset.testid || (el.classList.contains('session') ? 'session'
                      : el.tagName.toLowerCase()),
                  ring: style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) >= 2,
                  visible: el.checkVisibility()};
        }""")
        if focused["id"] == "body":
            break
        assert focused["ring"], focused
        assert focused["visible"], focused
        order.append(focused["id"])
    wanted = ["send-button", "new-session-button", "session", "compact-button"]
    for name in wanted:
        assert name in order, (name, order)
    positions = [order.index(name) for name in wanted]
    assert positions == sorted(positions), order


def test_every_control_has_a_name_and_the_landmarks_are_right(
        page: Page, app_server: str, install_fake_lm) -> None:
    open_chat(page, app_server, install_fake_lm)
    chat(page, "Name everything")
    cdp = page.context.new_cdp_session(page)
    nodes = cdp.send("Accessibility.getFullAXTree")["nodes"]

    def role(node):
        return (node.get("role") or {}).get("value")

    def name(node):
        return str((node.get("name") or {}).get("value") or "").strip()

    shown = [n for n in nodes if not n.get("ignored")]
    unnamed = [(role(n), n.get("backendDOMNodeId")) for n in shown
               if role(n) in CONTROL_ROLES and not name(n)]
    assert unnamed == []
    roles = [role(n) for n in shown]
    assert roles.count("main") == 1
    assert roles.count("banner") == 1
    assert "complementary" in roles
    assert "status" in roles
    # The status line is a polite live region: what it says is announced.
    live = page.get_by_test_id("status")
    expect(live).to_have_attribute("role", "status")
    expect(live).to_have_attribute("aria-live", "polite")
    # Both progress bars are named by their labels.
    for testid in ("boot-progress", "download-progress"):
        label_id = page.get_by_test_id(testid).get_attribute("aria-labelledby")
        assert page.locator(f"#{label_id}").count() == 1

    # Also the plain DOM: every visible button, input, textarea and select is labelled.
    unlabelled = page.evaluate("""() => [...document.querySelectorAll(
        'button, input, textarea, select')].filter((el) => {
          if (!el.checkVisibility() && !el.closest('label')) return false;
          const label = el.getAttribute('aria-label') || el.title
            || [...(el.labels || [])].map((l) => l.textContent).join('')
            || (el.getAttribute('aria-labelledby') || '').split(' ')
                 .map((id) => document.getElementById(id)?.textContent || '').join('')
            || (el.tagName === 'BUTTON' ? el.textContent : '');
          return !label.trim();
        }).map((el) => el.dataset.testid || el.outerHTML.slice(0, 80))""")
    assert unlabelled == []
