# Quotes in an answer, made clickable where the page being read can be shown: in the
# extension's side panel (window.pyAgentTabReader is there), each passage the answer
# quotes “like this” (or in a blockquote) becomes a button; extension/sidepanel.js
# scrolls the tab to it and highlights it when it is clicked. Elsewhere nothing changes.
from pyscript import document, window

from ui.dom import make, missing

OPENERS = {"\u201c": "\u201d", '"': '"'}
MIN_CHARS = 12     # shorter quotes are words, not passages
MAX_CHARS = 600
SHOW_TEXT = 4      # NodeFilter.SHOW_TEXT


def available():
    return not missing(getattr(window, "pyAgentTabReader", None))


def quotes_in(text):
    """(start, end) of each quoted passage in ``text``, end exclusive, quote marks
    included."""
    found = []
    at = 0
    while at < len(text):
        closer = OPENERS.get(text[at])
        if closer is None:
            at += 1
            continue
        end = text.find(closer, at + 1)
        if end < 0:
            break
        if MIN_CHARS <= end - at - 1 <= MAX_CHARS:
            found.append((at, end + 1))
        at = end + 1
    return found


def quote_button(text, quote):
    return make("button", "page-quote", text, attrs={
        "type": "button", "data-testid": "page-quote", "data-quote": quote,
        "title": "Show this passage on the page"})


def mark(node):
    """Make the quotes of the answer in ``node`` clickable (see the header)."""
    if not available():
        return
    walker = document.createTreeWalker(node, SHOW_TEXT)
    texts = []
    current = walker.nextNode()
    while not missing(current):
        texts.append(current)
        current = walker.nextNode()
    for text_node in texts:
        parent = text_node.parentElement
        if missing(parent) or parent.closest("button, code, pre, a"):
            continue
        data = text_node.data
        for start, end in reversed(quotes_in(data)):
            text_node.splitText(end)
            quoted = text_node.splitText(start)
            button = quote_button(quoted.data, quoted.data[1:-1])
            quoted.replaceWith(button)   # text_node keeps the text before the quote
    for block in node.querySelectorAll("blockquote"):
        quote = " ".join(str(block.textContent).split())
        if len(quote) >= MIN_CHARS and missing(block.querySelector(".page-quote")):
            block.classList.add("page-quote-block")
            block.appendChild(quote_button("Show on the page", quote[:MAX_CHARS]))
