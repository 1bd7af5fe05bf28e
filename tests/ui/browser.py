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
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

__all__ = ["chromium_path", "launched_browser", "screenshot"]

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


def screenshot(page: Any) -> bytes:
    """The whole page as a PNG for the docs, 1280 pixels wide and as tall as its content: the
    same bytes for the same page (its script has run, no hover, caret, animation or wall-clock
    time of the last live refresh), compressed harder than Chromium does."""
    page.wait_for_load_state("load")  # the deferred script has set the live switch
    page.mouse.move(0, 0)
    page.evaluate(
        "() => { const s = document.getElementById('live-status'); if (s) s.textContent = ''; }"
    )
    viewport = page.viewport_size
    page.set_viewport_size({"width": 1280, "height": 200})  # the page's height, no blank below
    try:
        png: bytes = page.screenshot(full_page=True, animations="disabled", caret="hide")
    finally:
        page.set_viewport_size(viewport)
    return recompressed(png)


def recompressed(png: bytes) -> bytes:
    """``png`` with its image data in one chunk at zlib's best compression (the pixels stay)."""
    signature, chunks, at = png[:8], [], 8
    while at < len(png):
        (length,) = struct.unpack(">I", png[at : at + 4])
        kind, body = png[at + 4 : at + 8], png[at + 8 : at + 8 + length]
        chunks.append((kind, body))
        at += 12 + length
    pixels = zlib.decompress(b"".join(body for kind, body in chunks if kind == b"IDAT"))
    out, image_written = [signature], False
    for kind, body in chunks:
        if kind != b"IDAT":
            out.append(_chunk(kind, body))
        elif not image_written:  # where the first IDAT was
            out.append(_chunk(b"IDAT", zlib.compress(pixels, 9)))
            image_written = True
    return b"".join(out)


def _chunk(kind: bytes, body: bytes) -> bytes:
    crc = zlib.crc32(kind + body)
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)
