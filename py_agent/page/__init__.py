"""The page the user is looking at, as tools: read, find, summarize, the selection, the
links and the open tabs (the Chrome extension's side panel offers them; docs/extension.md).

- :mod:`~py_agent.page.text`: the page reader's result as text and chunks, and page text
  said as data;
- :mod:`~py_agent.page.index`: a page's chunks searched with the recall index;
- :mod:`~py_agent.page.summary`: a long page summarized part by part;
- :mod:`~py_agent.page.tools`: the tools, over any :class:`PageSource`.
"""

from .text import Block, Chunk, PageText, as_data
from .tools import PageSource, PageSourceError, page_tools

__all__ = ["Block", "Chunk", "PageSource", "PageSourceError", "PageText", "as_data",
           "page_tools"]
