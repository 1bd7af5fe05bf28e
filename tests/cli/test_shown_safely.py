"""User data is data: what ``awa`` prints of a job's arguments, errors and tracebacks, and of a
database URL, through a real subprocess against PostgreSQL.

Job data comes from whoever inserted or ran the job. The human output shows it as written,
never as rich markup, with control characters escaped; ``--json`` keeps it exact. A URL is never
shown with its password, even when the driver quotes back a malformed one.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from awa.adapters.postgres import PostgresStore
from awa.domain import Fail, Job
from awa.ports import Finish
from tests.cli.conftest import Ran, claim_one, insert, run_awa

Awa = Callable[..., Ran]

MARKUP = "[/quote] [bold]loud[/bold] :smile:"
CONTROLS = "bell\x07 esc\x1b[31mred del\x7f csi\x9b2J cr\rX"
# what each control character becomes in the human output
ESCAPED = ("\\x07", "\\x1b[31mred", "\\x7f", "\\x9b2J", "\\x0dX")
RAW = ("\x07", "\x1b", "\x7f", "\x9b", "\r")


def failed_with(
    store: PostgresStore, error: str, traceback: str | None = None, **fields: Any
) -> Job:
    """A job on queue ``hostile`` whose one attempt failed with ``error``."""
    insert(store, "import_feed", queue="hostile", max_attempts=1, **fields)
    job = claim_one(store, "hostile")
    [finished] = store.finish([Finish(job.lease, Fail(error, traceback=traceback))])
    return finished.job  # type: ignore[union-attr, return-value]


def assert_shown_safely(ran: Ran) -> None:
    assert ran.code == 0, ran.stderr
    assert ran.stderr == ""  # no crash, no warning
    for raw in RAW:
        assert raw not in ran.stdout, (raw, ran.stdout)


def test_markup_in_args_or_an_error_does_not_break_job_list(awa: Awa, store: PostgresStore) -> None:
    insert(store, "send_email", queue="hostile")  # an ordinary neighbour, listed too
    failed_with(store, f"ValueError: {MARKUP}", args={"note": MARKUP})
    listed = awa("job", "list")
    assert_shown_safely(listed)
    assert MARKUP in listed.stdout  # as written: not parsed, not rendered, no emoji
    assert "2 job(s)" in listed.stdout


def test_job_dump_shows_markup_in_user_data_as_written(awa: Awa, store: PostgresStore) -> None:
    failed_with(
        store,
        f"ValueError: {MARKUP}",
        traceback=f"Traceback (most recent call last):\n  {MARKUP}",
        args={"note": MARKUP},
        tags=["[red]tag[/red]"],
        metadata={"by": "[link=https://evil.example]click[/link]"},
    )
    dumped = awa("job", "dump", "1")
    assert_shown_safely(dumped)
    assert json.dumps(MARKUP) in dumped.stdout  # the args, as compact JSON
    assert f"ValueError: {MARKUP}" in dumped.stdout  # the error history
    assert "[red]tag[/red]" in dumped.stdout
    assert "[link=https://evil.example]click[/link]" in dumped.stdout
    run = awa("job", "dump-run", "1", "--attempt", "1")
    assert run.code == 0, run.stderr
    assert f"ValueError: {MARKUP}" in run.stdout
    assert f"\n  {MARKUP}" in run.stdout  # the traceback keeps its lines


def test_control_characters_from_an_error_are_shown_escaped(awa: Awa, store: PostgresStore) -> None:
    failed_with(
        store,
        f"first line {CONTROLS}\nsecond line \x1b]0;title\x07",
        traceback=f"Traceback:\n  tab\there {CONTROLS}",
    )
    for args in (("job", "list"), ("job", "dump", "1"), ("job", "dump-run", "1", "--attempt", "1")):
        shown = awa(*args)
        assert_shown_safely(shown)
        # (the tables show an error's first line, and a CR ends a line for str.splitlines)
        for escaped in ESCAPED[:-1]:
            assert escaped in shown.stdout, (args, escaped, shown.stdout)
    assert "\\x0dX" in awa("job", "dump-run", "1", "--attempt", "1").stdout
    run = awa("job", "dump-run", "1", "--attempt", "1")
    # a multi-line field keeps its newlines and tabs; everything else is escaped
    assert "\nsecond line \\x1b]0;title\\x07" in run.stdout
    assert "\n  tab" in run.stdout  # (rich expands the tab)
    assert "here bell\\x07" in run.stdout


def test_a_dead_letter_entry_with_a_hostile_error_is_listed_safely(
    awa: Awa, store: PostgresStore
) -> None:
    store.set_dlq_enabled("hostile", True)
    failed_with(store, f"{MARKUP} {CONTROLS}")
    listed = awa("dlq", "list")
    assert_shown_safely(listed)
    assert MARKUP in listed.stdout
    assert "1 dead-letter entry" in listed.stdout


def test_json_output_keeps_hostile_user_data_exact(awa: Awa, store: PostgresStore) -> None:
    error = f"{MARKUP} {CONTROLS}\nline two"
    args = {"note": MARKUP, "controls": CONTROLS}
    failed_with(store, error, traceback=CONTROLS, args=args, tags=["[red]x"])
    for command in (("job", "dump", "1"), ("job", "list")):
        ran = awa(*command, "--json")
        for raw in RAW:  # JSON escapes C0; awa writes DEL and C1 as \\u escapes too
            assert raw not in ran.stdout, (command, raw)
        document = ran.json
        job = document["job"] if "job" in document else document["jobs"][0]
        assert job["args"] == args
        assert job["tags"] == ["[red]x"]
        assert job["errors"][-1]["error"] == error
        assert job["errors"][-1]["traceback"] == CONTROLS


# format characters: a reversed file name, an isolate, a zero-width space, a byte order mark,
# a line separator; and an OSC 8 hyperlink that a terminal would render as a link
FORMAT = (
    "bidi \u202egnp.exe isolate \u2066x\u2069 zero\u200bwidth bom\ufeff"
    " link \x1b]8;;https://evil.example/\x07click\x1b]8;;\x07 sep\u2028end"
)
FORMAT_ESCAPED = (
    "\\u202egnp.exe",
    "\\u2066x\\u2069",
    "zero\\u200bwidth",
    "bom\\ufeff",
    "\\x1b]8;;https://evil.example/\\x07click",
    "sep\\u2028end",
)
FORMAT_RAW = ("\u202e", "\u2066", "\u2069", "\u200b", "\ufeff", "\u2028", "\x1b", "\x07")


def test_format_characters_in_job_data_are_shown_escaped(awa: Awa, store: PostgresStore) -> None:
    failed_with(
        store,
        f"ValueError: {FORMAT}",
        traceback=f"Traceback (most recent call last):\n  {FORMAT}",
        args={"name": FORMAT},
        tags=["\u202etag"],
    )
    for args in (("job", "list"), ("job", "dump", "1"), ("job", "dump-run", "1", "--attempt", "1")):
        shown = awa(*args)
        assert shown.code == 0, shown.stderr
        for raw in FORMAT_RAW:
            assert raw not in shown.stdout, (args, raw, shown.stdout)
        # (a table's last-error cell holds the error's first 80 characters)
        for escaped in FORMAT_ESCAPED[:4] if args == ("job", "list") else FORMAT_ESCAPED:
            assert escaped in shown.stdout, (args, escaped, shown.stdout)
    assert "\\u202etag" in awa("job", "dump", "1").stdout
    for command in (("job", "dump", "1"), ("job", "list")):
        ran = awa(*command, "--json")
        for raw in FORMAT_RAW:  # written as \\u escapes: harmless on a terminal
            assert raw not in ran.stdout, (command, raw)
        document = ran.json
        job = document["job"] if "job" in document else document["jobs"][0]
        assert job["args"] == {"name": FORMAT}  # and the same data once parsed
        assert job["tags"] == ["\u202etag"]
        assert job["errors"][-1]["error"] == f"ValueError: {FORMAT}"


def test_an_error_that_quotes_user_input_shows_it_escaped(awa: Awa) -> None:
    ran = awa("callback", "complete", "nope\x1b[2J\x07")
    line = ran.assert_one_line_error("callback nope\\x1b[2J\\x07 not found")
    assert "\x1b" not in line
    assert "\x07" not in line


@pytest.mark.parametrize(
    ("payload", "says"),
    [
        ("[" * 5000 + "]" * 5000, "nested deeper than 64 levels"),  # RecursionError before 3.13
        ("[" * 100 + "]" * 100, "nested deeper than 64 levels"),  # read, then refused
        ("1" + "0" * 5000, "number too long"),
        ('{"ratio": NaN}', "holds nan, which JSON cannot represent"),  # read, then refused
        ('"a\\u0000b"', "NUL character"),
    ],
)
def test_a_payload_json_cannot_read_is_refused_on_one_line_and_changes_nothing(
    awa: Awa, store: PostgresStore, payload: str, says: str
) -> None:
    insert(store, queue="hostile")
    job = claim_one(store, "hostile")
    waiting = store.register_callback(job.lease, timeout_s=600).job  # type: ignore[union-attr]
    callback_id = waiting.callback_id or ""
    for verb in ("complete", "resume"):
        ran = awa("callback", verb, callback_id, "--payload", payload)
        ran.assert_one_line_error("--payload", says, code=2)
    assert store.get_job(job.id) == waiting


# -- database URLs ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://app:hunter2@127.0.0.1:notaport/db",  # a bad port
        "app:hunter2@localhost/db",  # no scheme: libpq quotes all of it back
        "postgresql://app:hunter 2@localhost/db",  # a space: libpq quotes the password alone
        "postgresql://app:hunter2@[::1/db",  # an unclosed IPv6 bracket: quoted back whole
        "host=localhost password=hunter2 bogus",  # conninfo with a stray word
        "postgresql://app@localhost/db?password=hunter2&nonsense=1",  # password in the query
    ],
)
def test_a_malformed_database_url_never_shows_its_password(url: str) -> None:
    for ran in (
        run_awa("job", "list", url=url),
        run_awa("--database-url", url, "queue", "stats", url=None),
        run_awa("migrate", f"--database-url={url}", url=None),
    ):
        line = ran.assert_one_line_error("cannot connect to PostgreSQL")
        assert "hunter" not in ran.stdout + ran.stderr, line


def test_an_unreachable_database_is_named_without_its_password() -> None:
    url = "postgresql://app:hunter2@127.0.0.1:1/nowhere?connect_timeout=3"
    line = run_awa("job", "list", url=url).assert_one_line_error("127.0.0.1:1")
    assert "hunter2" not in line


def test_a_url_in_a_refused_command_line_is_shown_without_its_password() -> None:
    ran = run_awa("job", "list", "postgresql://app:hunter2@db.example/app", url=None)
    line = ran.assert_one_line_error("unrecognized arguments", code=2)
    assert "postgresql://app:***@db.example/app" in line
    assert "hunter2" not in line
    ran = run_awa("--database-url", "app:hunter2@db", "job", "list", "--limit", "x", url=None)
    ran.assert_one_line_error("whole number", code=2)
    ran = run_awa("job", "list", "--database-url", "app:hunter2@db", "stray", url=None)
    assert "hunter2" not in ran.assert_one_line_error("unrecognized arguments: stray", code=2)
