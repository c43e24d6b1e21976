# Keeping the newest message in view, without pulling the user away from what they read.
#
# On wide screens the messages list scrolls itself (a chat pane between the status line
# and the composer); on narrow ones the page scrolls, with the composer sticky at the
# bottom (style.css decides; the list's computed overflow says which). New content
# follows the end only when the user was already there; otherwise the view stays put
# and "Jump to latest" appears.
from pyscript import document, window

from ui.dom import by_id, listen, to_js

BOTTOM_SLACK = 48    # px: this close to the end still counts as "at the latest message"

messages_el = by_id("messages")
form = by_id("composer")
jump_button = by_id("jump-latest")


def pane_scrolls():
    return str(window.getComputedStyle(messages_el).overflowY) in ("auto", "scroll")


def distance_from_latest():
    """How far (px) the end of the newest message is below what the user sees."""
    if pane_scrolls():
        return messages_el.scrollHeight - messages_el.scrollTop - messages_el.clientHeight
    return messages_el.getBoundingClientRect().bottom - form.getBoundingClientRect().top


def at_latest():
    return distance_from_latest() <= BOTTOM_SLACK


def scroll_to_latest(event=None):
    if pane_scrolls():
        messages_el.scrollTop = messages_el.scrollHeight
    else:
        gap = distance_from_latest()
        if gap > 0:
            window.scrollBy(0, gap + 12)
    jump_button.hidden = True


def after_change(was_at_latest):
    """Call after adding content, with at_latest() as it was before the change."""
    if was_at_latest:
        scroll_to_latest()
    elif not at_latest():
        jump_button.hidden = False


def hide_jump():
    """The messages are about to be replaced: nothing to jump to."""
    jump_button.hidden = True


def on_scroll(event):
    if not jump_button.hidden and at_latest():
        jump_button.hidden = True


def on_jump(event):
    scroll_to_latest()
    # The button hides: keep keyboard focus nearby (not in the textarea, which would
    # pop up a phone's keyboard).
    messages_el.focus(to_js({"preventScroll": True}))


def start():
    listen(messages_el, "scroll", on_scroll)
    listen(document, "scroll", on_scroll)   # the page's own scrolling (phones)
    listen(jump_button, "click", on_jump)
