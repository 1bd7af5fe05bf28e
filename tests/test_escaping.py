"""``awa.escaping``: every character that would act rather than show is escaped, everything
else is left alone, and the JSON form parses back to the same data. Checked over every code
point the running Python knows."""

from __future__ import annotations

import json
import sys
import unicodedata

from awa.escaping import HIDDEN_CATEGORIES, printable, printable_json

EVERY_CHARACTER = "".join(map(chr, range(sys.maxunicode + 1)))
HIDDEN = [c for c in EVERY_CHARACTER if unicodedata.category(c) in HIDDEN_CATEGORIES]
SHOWN = printable(EVERY_CHARACTER)  # once: a pass over 1.1 million characters


def test_the_hidden_characters_include_the_ones_that_fool_a_reader() -> None:
    named = {
        "\x1b": "ESC",
        "\x9b": "C1 CSI",
        "\x7f": "DEL",
        "\n": "newline",
        "\r": "CR",
        "\u202e": "RIGHT-TO-LEFT OVERRIDE",
        "\u2066": "LEFT-TO-RIGHT ISOLATE",
        "\u2069": "POP DIRECTIONAL ISOLATE",
        "\u200b": "ZERO WIDTH SPACE",
        "\u200f": "RIGHT-TO-LEFT MARK",
        "\ufeff": "BYTE ORDER MARK",
        "\u2028": "LINE SEPARATOR",
        "\u2029": "PARAGRAPH SEPARATOR",
        "\U000e0041": "TAG LATIN CAPITAL LETTER A",
        "\udc80": "a lone surrogate",
    }
    assert [name for char, name in named.items() if char not in HIDDEN] == []


def test_no_hidden_character_survives_and_the_result_is_one_line() -> None:
    assert [c for c in SHOWN if unicodedata.category(c) in HIDDEN_CATEGORIES] == []
    assert SHOWN.splitlines() == [SHOWN]
    SHOWN.encode("utf-8")  # no lone surrogate left: a terminal can be sent all of it


def test_each_hidden_character_is_spelled_as_a_python_literal_would() -> None:
    short = {"\t": "\\x09", "\n": "\\x0a", "\r": "\\x0d"}  # one spelling for every control
    for char in HIDDEN:
        literal = short.get(char) or char.encode("unicode_escape").decode("ascii")
        assert printable(char) == literal, hex(ord(char))


def test_everything_else_is_left_as_it_is() -> None:
    hidden = set(HIDDEN)
    visible = "".join(c for c in EVERY_CHARACTER if c not in hidden)
    assert printable(visible) == visible
    assert printable("日本語 ☃ 🚀 e\u0301 \\x1b [bold]") == "日本語 ☃ 🚀 e\u0301 \\x1b [bold]"


def test_escaping_twice_changes_nothing() -> None:
    assert printable(SHOWN) == SHOWN


def test_lines_keeps_newline_and_tab_and_nothing_else() -> None:
    assert printable("a\nb\tc\rd\u2028e\x85f", lines=True) == "a\nb\tc\\x0dd\\u2028e\\x85f"


def test_json_parses_back_to_the_same_data_with_nothing_hidden_raw() -> None:
    # (surrogates one by one: JSON itself reads an escaped high one and low one as a pair)
    every = "".join(c for c in EVERY_CHARACTER if unicodedata.category(c) != "Cs")
    data = {"every": every, "lone": ["\udc80", "a\ud800b"], "key\u202e": HIDDEN[:50]}
    document = printable_json(json.dumps(data, ensure_ascii=False, indent=2))
    assert json.loads(document) == data
    raw = [c for c in document if unicodedata.category(c) in HIDDEN_CATEGORIES]
    assert set(raw) <= {"\n"}  # the document's own indentation only
    assert printable_json(json.dumps("日本語 é 🚀", ensure_ascii=False)) == '"日本語 é 🚀"'
