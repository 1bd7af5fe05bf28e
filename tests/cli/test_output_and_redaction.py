"""The helpers behind what ``awa`` shows: ``printable`` and the printers (no markup, control
characters escaped) and ``redact`` (no password, however the URL is written). Pure: no
database, no subprocess."""

from __future__ import annotations

import io
import json

import pytest

from awa.cli import main
from awa.cli import output as out
from awa.redaction import redact, redact_url


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("esc\x1b[31m", "esc\\x1b[31m"),
        ("bel\x07 nul\x00 bs\x08 cr\r", "bel\\x07 nul\\x00 bs\\x08 cr\\x0d"),
        ("del\x7f c1\x85\x9b", "del\\x7f c1\\x85\\x9b"),
        ("two\nlines\ttab", "two\\x0alines\\x09tab"),
        ("lone \udcff surrogate", "lone \\udcff surrogate"),
        ("[bold]é 中 🙂[/bold]", "[bold]é 中 🙂[/bold]"),  # printable text is left alone
    ],
)
def test_printable_escapes_control_characters_and_nothing_else(text: str, shown: str) -> None:
    assert out.printable(text) == shown


def test_printable_keeps_newlines_and_tabs_only_where_lines_are_wanted() -> None:
    assert out.printable("a\nb\tc\x1b\rd", lines=True) == "a\nb\tc\\x1b\\x0dd"


@pytest.mark.parametrize("stream", [io.StringIO, _Terminal])
def test_the_printers_show_markup_as_written(stream: type[io.StringIO]) -> None:
    sink = stream()
    hostile = "[/quote] [bold]x[/bold] :smile: \x1b[2J"
    out.print_table(hostile, ["column [i]"], [[hostile]], sink)
    out.print_fields(hostile, [("name", hostile)], sink)
    out.print_line(hostile, sink)
    text = sink.getvalue()
    assert "\x1b[2J" not in text  # on a terminal rich styles its headers, nothing more
    if not sink.isatty():
        assert "\x1b" not in text
    assert text.count("[/quote] [bold]x[/bold] :smile: \\x1b[2J") == 5
    assert "column [i]" in text


def test_json_output_is_the_same_data_with_c1_controls_written_as_escapes() -> None:
    sink = io.StringIO()
    data = {"error": "a\x1b b\x7f c\x9b d\x85 [bold]", "é": "中"}
    out.print_json(data, sink)
    assert json.loads(sink.getvalue()) == data
    for raw in ("\x1b", "\x7f", "\x9b", "\x85"):
        assert raw not in sink.getvalue()
    assert "中" in sink.getvalue()  # not ASCII-escaped: only the controls are


@pytest.mark.parametrize(
    ("url", "redacted"),
    [
        ("postgresql://app:hunter2@db/app", "postgresql://app:***@db/app"),
        ("postgres://app:hunter2@db:5432/app?sslmode=require", "postgres://app:***@db:5432/app?sslmode=require"),
        ("postgresql://:hunter2@db/app", "postgresql://:***@db/app"),
        ("postgresql://app:p@ss/w#rd@db/app", "postgresql://app:***@db/app"),  # unencoded
        ("postgresql://app:hun ter2@db/app", "postgresql://app:***@db/app"),
        ("postgresql://app:hun%20ter2@db/app", "postgresql://app:***@db/app"),
        ("app:hunter2@db/app", "app:***@db/app"),  # the scheme forgotten
        ("postgresql://app@db/app?password=hunter2&x=1", "postgresql://app@db/app?password=***&x=1"),
        ("host=db password=hunter2 user=app", "host=db password=*** user=app"),
        ("host=db password='hun ter2' user=app", "host=db password=*** user=app"),
        ("host=db sslpassword=hunter2", "host=db sslpassword=***"),
        ("postgresql://app@db/app", "postgresql://app@db/app"),  # nothing to hide
        ("postgresql://db:5432/app", "postgresql://db:5432/app"),
    ],
)  # fmt: skip
def test_redact_url_hides_the_password_however_the_url_is_written(url: str, redacted: str) -> None:
    assert redact_url(url) == redacted


def test_redact_hides_a_known_password_wherever_a_message_quotes_it() -> None:
    url = "postgresql://app:hun ter2@db/app"
    message = 'unexpected spaces found in "hun ter2", use percent-encoded spaces (%20) instead'
    assert redact(message, [url]) == message.replace("hun ter2", "***")
    assert redact("cannot reach db", [url, None]) == "cannot reach db"
    two = "from postgresql://a:one@h1/x to mysql://b:two@h2/y"
    assert redact(two) == "from postgresql://a:***@h1/x to mysql://b:***@h2/y"


def test_redact_hides_a_quoted_conninfo_password_as_written_and_as_the_driver_reads_it() -> None:
    conninfo = r"host=db password='it\'s secret' user=app"
    assert redact_url(conninfo) == "host=db password=*** user=app"
    assert redact('bad value "it\'s secret"', [conninfo]) == 'bad value "***"'
    assert redact(r"bad value 'it\'s secret'", [conninfo]) == "bad value ***"


def test_main_refuses_a_command_line_on_one_line_without_the_password_it_quotes() -> None:
    stderr = io.StringIO()
    code = main(["--database-url", "app:hunter2@db", "job", "list", "hunter2"], stderr=stderr)
    assert code == 2
    [line] = stderr.getvalue().splitlines()
    assert line == "awa: error: unrecognized arguments: *** (see `awa --help`)"
