"""End-to-end fixtures: Debian's Chromium, launched headless by pytest-playwright.

Playwright cannot download its own browser here, so every test uses the system
Chromium through ``executable_path``.
"""

from __future__ import annotations

import shutil

import pytest

CHROMIUM_FLAGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def chromium_path() -> str:
    """The system Chromium, or a clear failure telling how to get it."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        pytest.fail("Chromium is not installed: run the README's test command, "
                    "which installs Debian's 'chromium' package.")
    return path


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict) -> dict:
    return {**browser_type_launch_args, "executable_path": chromium_path(),
            "headless": True, "args": CHROMIUM_FLAGS}
