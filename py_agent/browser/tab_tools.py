"""The extension's page tools, in the worker: the tab reader's raw tools (source ``tab``
on the page tools host; extension/tab_reader.js) called through the host, and the tools
:mod:`py_agent.page` makes of them put in the tool set while the reader is there.

The model is offered ``read_page``, ``find_in_page``, ``summarize_page`` (with the model
in use), ``page_selection``, ``page_links`` and ``list_tabs``; never the raw tools.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from ..model import LanguageModel
from ..page import PageSourceError, page_tools
from ..tools.toolset import ToolSet
from .page_tools import PageToolError, PageTools

SOURCE = "tab"
# The model-facing name's raw tool on the host.
RAW = {"read_page": "tab_read_page", "page_selection": "tab_selection",
       "page_links": "tab_links", "list_tabs": "tab_list"}


class TabSource:
    """A :class:`~py_agent.page.PageSource` over the host's raw tab tools."""

    def __init__(self, host: PageTools) -> None:
        self.host = host

    async def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            value = await self.host.call(RAW.get(name, name), arguments)
        except PageToolError as exc:
            raise PageSourceError(str(exc)) from None
        if not isinstance(value, dict):
            raise PageSourceError("the tab reader gave an answer that is not a page")
        return value


class TabTools:
    """Keeps ``toolset``'s ``tab`` source: the page tools while the host lists the tab
    reader's raw tools, nothing otherwise."""

    def __init__(self, toolset: ToolSet, model: Callable[[], Optional[LanguageModel]]) -> None:
        self.toolset = toolset
        self.model = model
        self.host: PageTools | None = None
        self.offered = False

    def listed(self, items: list[dict[str, Any]]) -> None:
        """The host's raw tab tools as just listed (none: the reader is gone)."""
        present = self.host is not None and any(item.get("name") == RAW["read_page"]
                                                for item in items)
        if present == self.offered:
            return
        self.offered = present
        tools = page_tools(TabSource(self.host), self.model) if present and self.host else []
        self.toolset.set_source(SOURCE, tools)
