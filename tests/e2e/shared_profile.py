"""One browser profile (context) that the tests of a file share, each on a new page.

A new browser context costs about half a second of CPU before its page has loaded
anything; a new page in an existing one a third of that. The tests of the browser's
building blocks (the IndexedDB store, the LLM host, the fake model, the Markdown
renderer) load a blank page each and need nothing of a profile but empty storage, so
they take a ``quick_page`` (conftest.py): a new page in the file's profile, after the
storage of every origin the profile has loaded anything from (IndexedDB, Cache Storage,
localStorage, service workers: Chrome's "clear site data") is cleared and found empty.
The profile keeps its HTTP cache, as a browser does; the page dies with its test (its
scripts, routes, listeners and workers with it). A failed test takes the profile with it.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from playwright.sync_api import Browser, Page


class SharedProfile:
    """A browser context whose pages are handed to one test after another."""

    def __init__(self, browser: Browser, context_args: dict[str, Any]) -> None:
        self.browser = browser
        self.context_args = context_args
        self.context: Any = None
        self.origins: set[str] = set()

    def new_page(self) -> Page:
        """A new page, the profile's storage cleared and checked empty first."""
        if self.context is None:
            self.context = self.browser.new_context(**self.context_args)
            self.origins.clear()
            self.context.on("request", self._note_origin)
        page = self.context.new_page()
        cdp = self.context.new_cdp_session(page)
        try:
            for origin in sorted(self.origins):
                cdp.send("Storage.clearDataForOrigin", {"origin": origin, "storageTypes": "all"})
                usage = cdp.send("Storage.getUsageAndQuota", {"origin": origin})
                left = [part for part in usage["usageBreakdown"] if part["usage"]]
                assert usage["usage"] == 0 and not left, f"{origin} still stores {left}"
        finally:
            cdp.detach()
        return page

    def done(self, failed: bool) -> None:
        """After a test: its pages closed; the whole profile if the test failed."""
        if self.context is None:
            return
        if failed:
            self.close()
            return
        for page in self.context.pages:
            page.close()

    def close(self) -> None:
        if self.context is not None:
            self.context.close()
            self.context = None

    def _note_origin(self, request) -> None:
        url = urlsplit(request.url)
        if url.scheme in ("http", "https"):
            self.origins.add(f"{url.scheme}://{url.netloc}")
