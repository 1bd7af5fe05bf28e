"""A real browser for the dashboard tests: Debian's Chromium driven by Playwright, launched from
the system's binary (``executable_path``), never a browser Playwright downloads.

Where Chromium is looked for: ``AWA_CHROMIUM``, then Debian's binary and its wrapper. Without
one the browser tests fail under ``CI`` (a missing browser must never pass as a green run; CI
installs the ``chromium`` package) and are skipped locally with the reason, as the PostgreSQL
tests are.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

__all__ = ["chromium_path", "launched_browser"]

_CANDIDATES = ("/usr/lib/chromium/chromium", "/usr/bin/chromium", "/usr/bin/chromium-browser")


def chromium_path() -> str | None:
    given = os.environ.get("AWA_CHROMIUM")
    if given:
        return given if Path(given).exists() else None
    for candidate in _CANDIDATES:
        if Path(candidate).exists():
            return candidate
    return shutil.which("chromium")


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(
            f"no browser for the dashboard's browser tests under CI: {reason}", pytrace=False
        )
    pytest.skip(f"no browser: {reason}")


def launched_browser() -> Iterator[Any]:
    """A headless Chromium for a test module; closed after it."""
    path = chromium_path()
    if path is None:
        _unavailable("no Chromium (apt-get install chromium, or set AWA_CHROMIUM)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        _unavailable(f"Playwright is not installed: {exc}")
        return
    with sync_playwright() as playwright:
        # root (CI, these machines) cannot use Chromium's sandbox
        args = ["--no-sandbox"] if os.geteuid() == 0 else []
        browser = playwright.chromium.launch(executable_path=path, args=args)
        try:
            yield browser
        finally:
            browser.close()
