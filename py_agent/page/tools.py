"""The page tools the agent is offered: the page the user is looking at, read, searched,
summarized, its selection, links and the open tabs.

They work over a :class:`PageSource`: whatever can run the page reader's raw tools
(``read_page``, ``page_selection``, ``page_links``, ``list_tabs``, WebMCP-shaped
JavaScript in the extension's side panel; a fake in the tests). A page longer than an
observation is never cut silently: a question is answered from the chunks that match it
(:class:`~.index.PageIndex`), "summarize" reads every chunk (:mod:`.summary`), and each
observation says what it holds and what it leaves out. Page text is data
(:func:`~.text.as_data`). Every page tool only reads, and its origin's trust is page
text: its observations carry the page's words, so a consequential call after one is
asked about (see :mod:`py_agent.tools.origin`). ``summarize_page`` reaches the agent's
model through its call's :class:`~py_agent.tools.RunContext`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Protocol

from ..attachments import Attachment, AttachmentError
from ..tools import OriginKind, RunContext, Tool, ToolOrigin, ToolOutput, Trust, tool
from .index import PageIndex
from . import summary as page_summary
from .text import Chunk, PageText, as_data

# An observation of a page tool holds at most this many characters (about 900 tokens:
# room for several passages in Gemini Nano's window beside the memory and the tools).
PAGE_ROOM_CHARS = 3600
READ_TIMEOUT_S = 40.0
SUMMARY_TIMEOUT_S = 600.0
PASSAGES = 6
QUOTE_HINT = ("Answer from this text only, and quote the words you use in “double quotes” "
              "so the user can find them on the page.")
# The extension's readers of the tab the user is on: the app's code, reading a page.
TAB_ORIGIN = ToolOrigin(kind=OriginKind.TAB, trust=Trust.PAGE_TEXT, source="tab")


class PageSourceError(Exception):
    """The page could not be read; the message says why, for the user and the model."""


class PageSource(Protocol):
    """Runs one of the page reader's raw tools by name and returns its result (a dict),
    or raises :class:`PageSourceError`."""

    async def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        ...


@dataclass
class _Read:
    page: PageText
    chunks: list[Chunk]
    index: PageIndex | None = None


class PageReader:
    """Reads pages through a :class:`PageSource`; a read that finds the page as it was
    (same tab, address and text size) reuses the last one's chunks and index."""

    def __init__(self, source: PageSource) -> None:
        self.source = source
        self._last: tuple[Any, _Read] | None = None

    async def read(self, tab: int | None = None) -> _Read:
        data = await self.source.call("read_page", {} if tab is None else {"tab": tab})
        page = PageText.from_reader(data)
        key = (page.tab_id, page.url, page.chars, page.total_chars)
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        read = _Read(page=page, chunks=page.chunks())
        self._last = (key, read)   # one page at a time: the newest
        return read

    def index(self, read: _Read) -> PageIndex:
        if read.index is None:
            read.index = PageIndex(read.chunks)
        return read.index


def image_bytes(value: Any) -> bytes:
    """A picture's bytes as the page source gives them: bytes, a buffer, or a JavaScript
    typed array not converted yet."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    to_bytes = getattr(value, "to_bytes", None)
    if callable(to_bytes):
        return bytes(to_bytes())
    raise PageSourceError("the page gave no picture")


def picture(data: dict[str, Any], name: str) -> Attachment:
    """The picture a page source returned, loaded and checked as any attachment."""
    try:
        return Attachment(content=image_bytes(data.get("image")), name=name,
                          type=str(data.get("type") or "") or None).loaded()
    except AttachmentError as exc:
        raise PageSourceError(str(exc)) from None


def _header(page: PageText) -> str:
    return f"Page: {page.title or '(untitled)'} — {page.url}"


def _passages(chunks: list[Chunk], count: int, room: int) -> tuple[str, list[Chunk]]:
    """As many of ``chunks`` (in page order) as fit in ``room`` characters."""
    chosen, size = [], 0
    for chunk in chunks:
        text = f"[{chunk.where(count)}]\n{chunk.text}"
        if size + len(text) + 2 > room:
            continue
        chosen.append(chunk)
        size += len(text) + 2
    chosen.sort(key=lambda c: c.number)
    return "\n\n".join(f"[{c.where(count)}]\n{c.text}" for c in chosen), chosen


def _observation(page: PageText, body: str, lines: list[str], what: str = "page text") -> str:
    parts = [_header(page), *lines, *page.notes(), QUOTE_HINT,
             as_data(body, title=page.title, url=page.url, what=what)]
    return "\n".join(parts)


def page_tools(source: PageSource, *, summarize: bool = True,
               room_chars: int = PAGE_ROOM_CHARS, pinned: tuple[str, ...] = ("read_page",),
               origin: ToolOrigin = TAB_ORIGIN) -> list[Tool]:
    """The page tools over ``source``; ``summarize=False`` leaves summarize_page out (it
    summarizes with the agent's model, from its call's context). ``pinned`` tools are
    offered with every message: beside a page, a question seldom names it ("what is the
    cat called?" is about the page the user reads)."""
    reader = PageReader(source)

    async def failed(call):
        try:
            return await call()
        except PageSourceError as exc:
            return f"The page could not be read: {exc}"

    async def read_page(question: str = "", tab: Optional[int] = None) -> str:
        """Read the web page the user is looking at (its main text, title and address),
        to answer questions about it, explain it or compare what it lists.

        Args:
            question: what the user wants to know from the page, in their words (a long
                page is answered from the passages that match it).
            tab: a tab id from list_tabs; the tab the user is on if left out.

        Examples:
            what is this page about
            what does this contract say about cancellation
            which of these laptops has 32 GB of memory
            does this article mention the price
            explain this page to me
        """
        async def run() -> str:
            read = await reader.read(tab)
            page, chunks = read.page, read.chunks
            if not chunks:
                return f"{_header(page)}\nThe page has no readable text." + \
                    "".join("\n" + n for n in page.notes())
            if len(page.text) <= room_chars:
                return _observation(page, page.text, [])
            count = len(chunks)
            if question.strip():
                found = reader.index(read).search(question, k=PASSAGES)
                body, shown = _passages(found, count, room_chars)
                if shown:
                    return _observation(page, body, [
                        f"The page is long ({page.chars:,} characters in {count} parts); "
                        f"below are the {len(shown)} parts that best match “{question}”. "
                        "find_in_page finds other passages; summarize_page reads all of it."])
            opening, shown = _passages(chunks[:PASSAGES], count, room_chars * 2 // 3)
            outline = [c.heading for c in chunks if c.heading]
            headings = list(dict.fromkeys(outline))[:30]
            listed = "; ".join(headings)
            return _observation(page, opening + ("\n\nSections: " + listed if listed else ""), [
                f"The page is long ({page.chars:,} characters in {count} parts); below are "
                f"its first {len(shown)} parts and its section headings. find_in_page finds "
                "the passages about a subject; summarize_page reads all of it."])
        return await failed(run)

    async def find_in_page(query: str, tab: Optional[int] = None) -> str:
        """Find the passages of the web page the user is looking at that are about
        something, with where they are on the page.

        Args:
            query: the words or subject to look for.
            tab: a tab id from list_tabs; the tab the user is on if left out.

        Examples:
            find where the page talks about refunds
            search this page for the warranty
            where does it mention the deadline
            find "cancellation" on this page
        """
        async def run() -> str:
            read = await reader.read(tab)
            found = reader.index(read).search(query, k=PASSAGES)
            if not found:
                return f"{_header(read.page)}\nNothing on the page matches “{query}”."
            body, shown = _passages(found, len(read.chunks), room_chars)
            return _observation(read.page, body, [
                f"The {len(shown)} passages of the page that best match “{query}”, in page "
                "order, each with where it is."])
        return await failed(run)

    async def summarize_page(ctx: RunContext, focus: str = "", tab: Optional[int] = None) -> str:
        """Summarize the whole web page the user is looking at, however long, reading it
        part by part.

        Args:
            focus: what the summary should keep above all (optional).
            tab: a tab id from list_tabs; the tab the user is on if left out.

        Examples:
            summarize this page
            give me the gist of this article
            tl;dr of this page
            what are the key points of this document
        """
        async def run() -> str:
            read = await reader.read(tab)
            page = read.page
            if ctx.model is None:
                return "No model is available to summarize the page."
            if not read.chunks:
                return f"{_header(page)}\nThe page has no readable text."
            if len(page.text) <= room_chars:
                return _observation(page, page.text, [
                    "The page is short: here is all of it to summarize."])
            result = await page_summary.summarize_page(ctx.model, page, read.chunks, focus=focus)
            lines = [f"Summary of the whole page: all {len(read.chunks)} parts were read, in "
                     f"{len(result.parts)} steps."]
            if result.failed:
                lines.append("Steps " + ", ".join(map(str, sorted(result.failed))) +
                             " could not be summarized; their parts are missing from it.")
            if not result.text:
                return "\n".join([_header(page), *lines])
            return _observation(page, result.text, lines, what="summary of the page")
        return await failed(run)

    async def page_selection(tab: Optional[int] = None) -> str:
        """The text the user selected (highlighted) on the page they are looking at, to
        explain, translate or answer questions about it.

        Args:
            tab: a tab id from list_tabs; the tab the user is on if left out.

        Examples:
            explain the selected paragraph
            what does the highlighted text mean
            translate my selection
            summarize what I selected
        """
        async def run() -> str:
            data = await source.call("page_selection", {} if tab is None else {"tab": tab})
            text = str(data.get("text") or "")
            header = f"Page: {data.get('title') or '(untitled)'} — {data.get('url') or ''}"
            if not text.strip():
                return f"{header}\nNothing is selected on that page."
            body = text if len(text) <= room_chars else text[:room_chars] + \
                f" … [the selection goes on for {len(text) - room_chars:,} more characters]"
            return "\n".join([header, QUOTE_HINT, as_data(body, title=str(data.get("title") or ""),
                                                          url=str(data.get("url") or ""),
                                                          what="selected text")])
        return await failed(run)

    async def page_links(tab: Optional[int] = None) -> str:
        """The links on the page the user is looking at: each link's text and address.

        Args:
            tab: a tab id from list_tabs; the tab the user is on if left out.

        Examples:
            what links are on this page
            where does this page link to
            find the link to the warranty terms
        """
        async def run() -> str:
            data = await source.call("page_links", {} if tab is None else {"tab": tab})
            links = data.get("links") or []
            header = f"Page: {data.get('title') or '(untitled)'} — {data.get('url') or ''}"
            if not links:
                return f"{header}\nThe page has no visible links."
            lines, size = [], 0
            for link in links:
                line = f"- {link.get('text') or '(no text)'}: {link.get('url')}"
                if size + len(line) > room_chars:
                    lines.append(f"… and {len(links) - len(lines)} more links")
                    break
                lines.append(line)
                size += len(line) + 1
            return "\n".join([header, as_data("\n".join(lines), what="list of links")])
        return await failed(run)

    async def page_images(tab: Optional[int] = None) -> str:
        """The pictures on the page the user is looking at: each one's number, its alt
        text (what the page says it shows) and its size.

        Args:
            tab: a tab id from list_tabs; the tab the user is on if left out.

        Examples:
            what pictures are on this page
            describe the images in this article
            what does the photo show
        """
        async def run() -> str:
            data = await source.call("page_images", {} if tab is None else {"tab": tab})
            images = data.get("images") or []
            header = f"Page: {data.get('title') or '(untitled)'} — {data.get('url') or ''}"
            if not images:
                return f"{header}\nThe page shows no pictures."
            lines = [f"- picture {i}: “{item.get('alt') or 'no alt text'}”, "
                     f"{item.get('width')}×{item.get('height')} — {item.get('url')}"
                     for i, item in enumerate(images, 1)]
            return "\n".join([header, "look_at_image(index) shows one of them to a model "
                               "that sees.", as_data("\n".join(lines), what="list of pictures")])
        return await failed(run)

    async def look_at_image(index: int = 1, tab: Optional[int] = None) -> str | ToolOutput:
        """Look at one picture of the page the user is looking at (its number from
        page_images), to say what it shows.

        Args:
            index: the picture's number in page_images (1 is the first).
            tab: a tab id from list_tabs; the tab the user is on if left out.

        Examples:
            look at the first picture on the page
            what is in the chart on this page
            read the text in the image
        """
        async def run() -> str | ToolOutput:
            arguments: dict[str, Any] = {"index": index}
            if tab is not None:
                arguments["tab"] = tab
            data = await source.call("look_at_image", arguments)
            seen = picture(data, f"picture {index} of the page")
            text = (f"Picture {index} of the page {data.get('title') or ''} — alt text: "
                    f"“{data.get('alt') or 'none'}”, {seen.describe()}.")
            return ToolOutput(as_data(text, what="picture of the page"), (seen,))
        return await failed(run)

    async def capture_tab(tab: Optional[int] = None) -> str | ToolOutput:
        """A screenshot of what the user sees of the page they are looking at (its
        visible part), to answer questions about how it looks: a chart, an error dialog,
        a layout.

        Args:
            tab: a tab id from list_tabs; the tab the user is on if left out.

        Examples:
            what does this error dialog mean
            look at my screen
            which of these two charts shows the drop
            take a screenshot of this page
        """
        async def run() -> str | ToolOutput:
            data = await source.call("capture_tab", {} if tab is None else {"tab": tab})
            seen = picture(data, f"screenshot of {data.get('title') or 'the tab'}")
            text = (f"A screenshot of the visible part of {data.get('title') or '(untitled)'} "
                    f"— {data.get('url') or ''}: {seen.describe()}.")
            return ToolOutput(as_data(text, what="screenshot of the page"), (seen,))
        return await failed(run)

    async def list_tabs() -> str:
        """The browser tabs that are open: their title, address and tab id (to read
        another tab with read_page).

        Examples:
            which tabs do I have open
            list my tabs
            compare this page with my other tab
        """
        async def run() -> str:
            data = await source.call("list_tabs", {})
            tabs = data.get("tabs") or []
            lines = [f"- tab {t.get('tab')}: {t.get('title') or '(untitled)'} — {t.get('url')}"
                     + (" (the one the user is on)" if t.get("current") else "") for t in tabs]
            hidden = int(data.get("hidden") or 0)
            note = (f"{hidden} other tab(s) are open whose title the extension may not see "
                    "until the user opens the panel on them." if hidden else "")
            if not lines:
                return note or "No tabs are open besides this panel."
            return "\n".join(x for x in [as_data("\n".join(lines), what="list of tabs"), note] if x)
        return await failed(run)

    keywords = {
        "read_page": ["page", "this page", "article", "website", "tab", "document", "contract",
                      "compare", "which", "explain", "says"],
        "find_in_page": ["find", "search", "where", "mention", "page", "passage", "section"],
        "summarize_page": ["summarize", "summary", "gist", "tl;dr", "key points", "overview",
                           "page", "article"],
        "page_selection": ["selection", "selected", "highlighted", "marked", "paragraph"],
        "page_links": ["links", "link", "url", "address", "navigate"],
        "list_tabs": ["tabs", "open tabs", "windows", "other tab"],
        "page_images": ["pictures", "images", "photos", "alt text", "figure"],
        "look_at_image": ["picture", "image", "photo", "chart", "figure", "see", "look"],
        "capture_tab": ["screenshot", "screen", "see", "look", "visible", "dialog", "chart",
                        "shows", "layout"],
    }
    timeouts = {"summarize_page": SUMMARY_TIMEOUT_S}
    functions = [read_page, find_in_page, page_selection, page_links, page_images,
                 look_at_image, capture_tab, list_tabs]
    if summarize:
        functions.insert(2, summarize_page)
    return [tool(function, keywords=keywords[function.__name__],
                 pinned=function.__name__ in pinned, origin=origin,
                 timeout_s=timeouts.get(function.__name__, READ_TIMEOUT_S),
                 observation_chars=room_chars + 1200)
            for function in functions]
