# Small DOM helpers shared by every part of the page.
#
# Model and tool text only ever reaches the page through textContent (see make), never
# as HTML: that is what keeps injected markup inert.
import json

from pyscript import document, window
from pyscript.ffi import create_proxy, is_none

_proxies = []   # event handlers stay alive as long as the page


def by_id(testid):
    return document.querySelector('[data-testid="%s"]' % testid)


def missing(value):
    """True for None and for JS null/undefined."""
    return value is None or is_none(value)


def now_ms():
    return int(window.performance.now())


def from_js(value):
    """A JS value as plain Python (dicts, lists, str, numbers, None)."""
    if missing(value):
        return None
    text = window.JSON.stringify(value)
    if missing(text):
        return None
    return json.loads(text)


def to_js(value):
    return window.JSON.parse(json.dumps(value))


def make(tag, cls=None, text=None, attrs=None, parent=None):
    node = document.createElement(tag)
    if cls:
        node.className = cls
    if text is not None:
        node.textContent = text
    if attrs:
        for name in attrs:
            node.setAttribute(name, str(attrs[name]))
    if parent is not None:
        parent.append(node)
    return node


def clear(node):
    node.replaceChildren()


def part(node, selector):
    return node.querySelector(selector)


def clicked_in_row(event, row_attribute):
    """For a click on a list: the control with a ``data-action`` that was clicked and
    the ``row_attribute`` of the list row (``li``) it sits in; (None, None) for a click
    anywhere else."""
    target = event.target.closest("[data-action]")
    if missing(target):
        return None, None
    row = target.closest("li[%s]" % row_attribute)
    if missing(row):
        return None, None
    return target, row.getAttribute(row_attribute)


def listen(target, name, function):
    proxy = create_proxy(function)
    _proxies.append(proxy)
    target.addEventListener(name, proxy)
    return proxy


def keep(function):
    """A JS-callable proxy that is never garbage collected."""
    proxy = create_proxy(function)
    _proxies.append(proxy)
    return proxy


def clip(text, limit):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def plural(count, word, words=None):
    return "%d %s" % (count, word if count == 1 else (words or word + "s"))


def number(value):
    """An int with thousands separators (MicroPython's format has no ',')."""
    text = str(int(value))
    sign = ""
    if text.startswith("-"):
        sign, text = "-", text[1:]
    groups = []
    while len(text) > 3:
        groups.insert(0, text[-3:])
        text = text[:-3]
    groups.insert(0, text)
    return sign + ",".join(groups)


def seconds(ms):
    if ms >= 1000:
        return "%.1f s" % (ms / 1000)
    return "%d ms" % int(ms) if ms >= 1 else "<1 ms"


def format_input(value):
    if isinstance(value, str):
        return value
    return json.dumps(value)


# Characters that show nothing, or turn around what is shown (controls, zero-width
# characters, bidi embeddings, overrides and isolates, tag characters): the worker already
# keeps them out of what a server says about itself; what the model writes (a call's
# arguments) may still hold them, so the page shows them as escapes.
_HIDDEN = ((0x00, 0x08), (0x0B, 0x1F), (0x7F, 0x9F), (0x200B, 0x200F), (0x2028, 0x202E),
           (0x2060, 0x206F), (0xFEFF, 0xFEFF), (0xFFF9, 0xFFFB), (0xE0000, 0xE007F))


def _hidden(code):
    for low, high in _HIDDEN:
        if low <= code <= high:
            return True
    return False


def visible(text):
    """``text`` with every control, invisible and reordering character as a visible
    escape (\\u202e), newlines and tabs kept."""
    out = []
    for char in str(text):
        code = ord(char)
        if code not in (9, 10) and _hidden(code):
            out.append("\\u%04x" % code if code <= 0xFFFF else "\\U%08x" % code)
        else:
            out.append(char)
    return "".join(out)


def label(text, limit=64):
    """Someone else's name for a thing, as a label: on one line, without hidden
    characters, at most ``limit`` characters."""
    words = "".join(char for char in str(text or "") if not _hidden(ord(char))).split()
    line = " ".join(words)
    return line if len(line) <= limit else line[:limit - 1].rstrip() + "…"
