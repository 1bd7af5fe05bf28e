"""Text from outside made safe to show on a terminal or to write into a log line.

Job data (arguments, tags, error texts, tracebacks, even a kind or a queue name) comes from
whoever inserted or ran the job. Written raw, ESC starts a sequence the terminal obeys (clear
the screen, retitle the window, an OSC 8 hyperlink), a newline or a CR forges a log record of
its own, U+202E reverses the text after it and U+200B hides inside a word. So every character
that would act rather than show is written the way a Python string literal spells it:

* controls (Unicode category Cc: C0 with ESC, newline, CR and tab, DEL, C1 with its one-byte
  CSI U+009B) as ``\\x1b``, ``\\x0a``, ``\\x9b``;
* format characters (Cf: the bidi embeddings, overrides and isolates U+202A-202E and
  U+2066-2069, the marks U+200E/200F and U+061C, the zero-width U+200B-200D and U+2060,
  U+FEFF, the invisible tag characters U+E0000-E007F) and the line and paragraph separators
  U+2028/2029 (Zl, Zp) as ``\\u202e``, ``\\U000e0041``;
* unpaired surrogates (Cs), which no terminal can be sent, as ``\\udc80``.

Everything else (letters of every script, emoji, combining accents) stays as it is, and so
does a backslash already in the text: escaping twice changes nothing. An emoji joined with
U+200D shows as its parts with ``\\u200d`` between them, the price of never hiding a
character. The categories come from the running Python's ``unicodedata``, so a format
character added to Unicode is escaped as soon as Python knows it.

Pure and stdlib only: the CLI, the worker's log formatters and the runtime's log lines all
use it, and none of them may depend on another.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable

__all__ = ["HIDDEN_CATEGORIES", "printable", "printable_json"]

#: the Unicode categories written escaped: controls, format characters, line and paragraph
#: separators, unpaired surrogates
HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})

_LINES = frozenset("\n\t")  # kept by ``printable(lines=True)``
_NONE: frozenset[str] = frozenset()


def _as_literal(char: str) -> str:
    """How a Python string literal spells ``char``: ``\\x1b``, ``\\u202e``, ``\\U000e0041``."""
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _as_json(char: str) -> str:
    """How a JSON string spells ``char``: ``\\u202e``, a surrogate pair beyond the BMP."""
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def _escaped(text: str, kept: frozenset[str], spelled: Callable[[str], str]) -> str:
    # every character escaped here is one ``str.isprintable`` refuses: most texts are
    # printable and pass in one scan, the rest are looked at character by character
    if text.isprintable():
        return text
    return "".join(
        spelled(char)
        if not char.isprintable()
        and char not in kept
        and unicodedata.category(char) in HIDDEN_CATEGORIES
        else char
        for char in text
    )


def printable(text: str, *, lines: bool = False) -> str:
    """``text`` safe to show: every control, format character, line separator and unpaired
    surrogate escaped, so the result is one line. With ``lines``, newline and tab are kept
    (a traceback shown whole); CR, U+2028 and the rest are still escaped."""
    if lines:  # line by line, so that each line of a traceback takes the quick path
        return "\n".join(_escaped(line, _LINES, _as_literal) for line in text.split("\n"))
    return _escaped(text, _NONE, _as_literal)


def printable_json(document: str) -> str:
    """A JSON document (``json.dumps(..., ensure_ascii=False)``) with the characters it left
    raw that ``printable`` would escape (DEL, C1, format characters, U+2028/2029, unpaired
    surrogates) written as ``\\u`` escapes: it parses back to the same data, and shows
    harmlessly on a terminal. JSON syntax is ASCII and ``json`` escapes C0 inside strings, so
    only the strings change; a raw newline or tab is the document's own indentation, kept."""
    return _escaped(document, _LINES, _as_json)
