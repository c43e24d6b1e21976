"""The extension's page tools, in the worker: a tool source (``tab``) over the tab
reader's raw tools (source ``tab`` on the page tools host; extension/tab_reader.js),
offering the tools :mod:`py_agent.page` makes of them while the reader is there.

The model is offered ``read_page``, ``find_in_page``, ``summarize_page`` (with the
agent's model, from its call's context), ``page_selection``, ``page_links`` and
``list_tabs``; never the raw tools.
"""

from __future__ import annotations

from typing import Any

from ..page import PageSourceError, page_tools
from ..page.tools import TAB_ORIGIN
from ..tools import Tool
from .page_tools import PageToolError, PageToolsHost

SOURCE = "tab"
# The model-facing name's raw tool on the host.
RAW = {"read_page": "tab_read_page", "page_selection": "tab_selection",
       "page_links": "tab_links", "list_tabs": "tab_list", "page_images": "tab_images",
       "look_at_image": "tab_image", "capture_tab": "tab_capture"}


class TabSource:
    """A :class:`~py_agent.page.PageSource` over the host's raw tab tools."""

    def __init__(self, host: PageToolsHost) -> None:
        self.host = host

    async def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            value = await self.host.call(RAW.get(name, name), arguments)
        except PageToolError as exc:
            raise PageSourceError(str(exc)) from None
        if not isinstance(value, dict):
            raise PageSourceError("the tab reader gave an answer that is not a page")
        return value


class TabToolSource:
    """The tool source ``tab``: the page tools while the host lists the tab reader's
    raw tools, none otherwise (made once, so the same tools while the reader stays)."""

    key = SOURCE
    origin = TAB_ORIGIN

    def __init__(self, host: PageToolsHost) -> None:
        self.host = host
        self.changed = host.changed
        self._tools: list[Tool] = []

    async def list(self) -> list[Tool]:
        present = any(item.get("source") == SOURCE and item.get("name") == RAW["read_page"]
                      for item in await self.host.describe())
        if not present:
            self._tools = []
        elif not self._tools:
            self._tools = page_tools(TabSource(self.host))
        return list(self._tools)

    async def close(self) -> None:
        return None
