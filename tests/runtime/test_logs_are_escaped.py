"""A worker's log cannot be forged or turned against the terminal that tails it: whatever a
handler's exception says, each record is one line (a traceback's lines marked as its own),
with no control or format character left raw, in the text and in the JSON format."""

from __future__ import annotations

import io
import json
import logging
import re
import sys
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

import awa
from awa.escaping import HIDDEN_CATEGORIES
from awa.runtime.observe import AttemptEnd, Observer
from awa.worker import JsonFormatter, TextFormatter
from awa.worker.log_output import TRACEBACK_PREFIX

from .conftest import memory_clients, reaches, run, until

S = awa.JobState

FORGED = "2030-01-01 00:00:00,000 INFO awa.worker: job 99 (work, queue default) attempt 1/1"
HOSTILE = (
    f"bad row\n{FORGED} completed after 0.001s\r"
    "\x1b[2J\x1b[H"  # clear the screen, cursor home
    "\x1b]8;;https://evil.example/\x07click here\x1b]8;;\x07"  # an OSC 8 hyperlink
    " \u202egnp.exe \x9b31m red \u2066isolated\u2069 zero\u200bwidth \ufeffbom \u2028sep"
)
RECORD = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO|WARNING|ERROR) [\w.]+: ")


@dataclass
class Row:
    n: int


class Echo(Observer):
    """An observer that fails on a job's error, quoting it: a traceback with job data in it."""

    def attempt_ended(self, end: AttemptEnd) -> None:
        if end.error:
            raise RuntimeError(f"cannot file {end.error}")


def raw_hidden(text: str) -> list[str]:
    """The controls and format characters left raw in ``text``, but its newlines."""
    return [c for c in text if c != "\n" and unicodedata.category(c) in HIDDEN_CATEGORIES]


class Captured:
    """What the ``awa`` loggers wrote through each formatter, and how many records."""

    def __init__(self, *formatters: logging.Formatter) -> None:
        self.streams = [io.StringIO() for _ in formatters]
        self.handlers = [logging.StreamHandler(s) for s in self.streams]
        for handler, formatter in zip(self.handlers, formatters, strict=True):
            handler.setFormatter(formatter)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def output(self, index: int) -> str:
        return self.streams[index].getvalue()


@pytest.fixture
def captured() -> Iterator[Captured]:
    capture = Captured(TextFormatter(), JsonFormatter(), logging.Formatter("%(message)s"))
    counter = logging.Handler()
    counter.emit = capture.emit  # type: ignore[method-assign]
    logger = logging.getLogger("awa")
    level = logger.level
    logger.setLevel(logging.DEBUG)
    for handler in (*capture.handlers, counter):
        logger.addHandler(handler)
    yield capture
    for handler in (*capture.handlers, counter):
        logger.removeHandler(handler)
    logger.setLevel(level)


def hostile_worker_log(captured: Captured) -> int:
    """A worker whose handler raises ``HOSTILE``, heard by an observer that fails on it; the
    failed job's id."""

    async def story() -> int:
        _, _, [client] = memory_clients()

        @client.task(Row)
        async def ingest(job: awa.Job[Row]) -> None:
            raise ValueError(HOSTILE)

        job = await client.insert(Row(7), max_attempts=1)
        await client.start([("default", 1)], observers=[Echo()])
        await reaches(client, job.id, S.FAILED)
        await until(lambda: any(r.exc_info for r in captured.records))
        await client.shutdown()
        return job.id

    return run(story)


def test_a_hostile_exception_text_is_one_escaped_line_in_the_text_log(
    captured: Captured,
) -> None:
    job_id = hostile_worker_log(captured)
    lines = captured.output(0).splitlines()  # every line boundary Python knows: none hide
    assert captured.output(0).count("\n") == len(lines)
    starts = [line for line in lines if RECORD.match(line)]
    assert len(starts) == len(captured.records)  # one line per record
    for line in lines:
        assert RECORD.match(line) or line.startswith(TRACEBACK_PREFIX), line
        assert raw_hidden(line) == [], line
    assert not any(line.startswith(FORGED) for line in lines)
    [failed] = [line for line in starts if f"job {job_id} (row, queue default)" in line]
    assert "attempt 1/1 failed after" in failed
    assert "ValueError: bad row\\x0a2030-01-01 00:00:00,000 INFO awa.worker: job 99" in failed
    for shown in ("\\x0d\\x1b[2J", "\\x1b]8;;https://evil.example/\\x07click", "\\u202egnp"):
        assert shown in failed
    for shown in ("\\x9b31m", "\\u2066isolated\\u2069", "zero\\u200bwidth", "\\ufeffbom"):
        assert shown in failed
    # the observer's traceback: marked lines, the exception's own newline escaped inside one
    traceback = [line for line in lines if line.startswith(TRACEBACK_PREFIX)]
    assert traceback[0] == TRACEBACK_PREFIX + "Traceback (most recent call last):"
    assert any("RuntimeError: cannot file ValueError: bad row" in line for line in traceback)


def test_a_hostile_exception_text_is_one_json_object_a_line_and_stays_exact(
    captured: Captured,
) -> None:
    hostile_worker_log(captured)
    output = captured.output(1)
    assert raw_hidden(output) == []
    documents = [json.loads(line) for line in output.splitlines()]
    assert len(documents) == len(captured.records)
    [failed] = [d for d in documents if d.get("outcome") == "failed"]
    assert failed["error"] == f"ValueError: {HOSTILE}"  # the data, exact once parsed
    [broken] = [d for d in documents if "exception" in d]
    assert f"RuntimeError: cannot file ValueError: {HOSTILE}" in broken["exception"]


def test_an_attempt_line_is_one_line_under_a_formatter_of_your_own(captured: Captured) -> None:
    hostile_worker_log(captured)
    [failed] = [r for r in captured.records if getattr(r, "outcome", None) == "failed"]
    line = logging.Formatter("%(levelname)s %(message)s").format(failed)
    assert line.splitlines() == [line]  # one line, whatever the error holds
    assert raw_hidden(line) == []
    assert line.startswith(f"WARNING job {failed.job_id} (row, queue default) attempt 1/1 failed")  # type: ignore[attr-defined]
    assert failed.error == f"ValueError: {HOSTILE}"  # type: ignore[attr-defined]  # exact


def test_every_line_break_python_knows_stays_inside_its_traceback_line() -> None:
    """A CR, VT, FF, FS, NEL or U+2028 in an exception's text ends a line for some reader
    (``str.splitlines``, a terminal, an editor): escaped, not split on."""
    breaks = "a\rb\x0bc\x0cd\x1ce\x85f\u2028g\u2029h"
    try:
        raise ValueError(breaks)
    except ValueError:
        record = logging.LogRecord("awa.x", logging.ERROR, __file__, 1, breaks, (), sys.exc_info())
    record.stack_info = f"Stack (most recent call last):\n  {breaks}"
    text = TextFormatter().format(record)
    lines = text.splitlines()
    assert len(lines) == text.count("\n") + 1
    assert RECORD.match(lines[0])
    assert lines[0].endswith(": a\\x0db\\x0bc\\x0cd\\x1ce\\x85f\\u2028g\\u2029h")
    assert lines[-1] == TRACEBACK_PREFIX + "  a\\x0db\\x0bc\\x0cd\\x1ce\\x85f\\u2028g\\u2029h"
    assert all(line.startswith(TRACEBACK_PREFIX) for line in lines[1:])
    assert f"{TRACEBACK_PREFIX}ValueError: a\\x0db" in text
