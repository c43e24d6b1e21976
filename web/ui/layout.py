# Page layout glue: the skip link, and on narrow screens (phones) the sidebar as a
# drawer the header's button opens, so that the chat fills the screen.
from pyscript import document, window

from ui.dom import by_id, listen, missing, to_js

NARROW = "(max-width: 760px)"   # keep in step with style.css

skip_link = by_id("skip-link")
toggle = by_id("drawer-toggle")
close_button = by_id("drawer-close")
sidebar = document.getElementById("sidebar")
main = document.getElementById("main")
header = document.querySelector(".topbar")
chat_input = by_id("chat-input")
status_line = by_id("status")
session_list = by_id("session-list")
new_session_button = by_id("new-session-button")

_narrow = window.matchMedia(NARROW)


def drawer_open():
    return sidebar.getAttribute("data-open") == "true"


def open_drawer(event=None):
    sidebar.setAttribute("data-open", "true")
    toggle.setAttribute("aria-expanded", "true")
    # The drawer covers the page: what is under it can be neither reached nor read.
    main.inert = True
    header.inert = True
    close_button.focus()


def close_drawer(event=None, focus=None):
    if not drawer_open():
        return
    sidebar.setAttribute("data-open", "false")
    toggle.setAttribute("aria-expanded", "false")
    main.inert = False
    header.inert = False
    (focus or toggle).focus()


def on_toggle(event):
    if drawer_open():
        close_drawer()
    else:
        open_drawer()


def on_sidebar_key(event):
    if event.key == "Escape" and drawer_open():
        event.preventDefault()
        close_drawer()


def on_session_chosen(event):
    # Picking or starting a session in the drawer: show its chat at once.
    if not (drawer_open() and _narrow.matches):
        return
    button = event.target.closest("button")
    if missing(button):
        return
    if button.classList.contains("session") or button == new_session_button:
        close_drawer(focus=chat_input if not chat_input.disabled else toggle)


def on_width_change(event):
    if not _narrow.matches:
        close_drawer(focus=document.activeElement)


def skip_to_chat(event):
    """The skip link: straight to the message box (or, while it cannot be used, to the
    status line that says why)."""
    event.preventDefault()
    close_drawer()
    target = chat_input if not chat_input.disabled else status_line
    target.focus()
    target.scrollIntoView(to_js({"block": "nearest"}))


def start():
    listen(skip_link, "click", skip_to_chat)
    listen(toggle, "click", on_toggle)
    listen(close_button, "click", lambda event: close_drawer())
    listen(sidebar, "keydown", on_sidebar_key)
    listen(session_list, "click", on_session_chosen)
    listen(new_session_button, "click", on_session_chosen)
    listen(_narrow, "change", on_width_change)
