"""How a worker process writes its log: one line per record on stderr, as text or as JSON.

No record can span lines or reach the terminal of whoever tails the log as anything but text:
a record's message, whatever job data it quotes, goes through ``awa.escaping`` (controls as
``\\x1b``, ``\\x0a``, format characters as ``\\u202e``).

The text form is ``time LEVEL logger: message`` on one line. A traceback, the one thing worth
reading on several lines, follows on lines of its own, each starting with ``TRACEBACK_PREFIX``
and escaped likewise: every line that does not start with it starts a record.

The JSON form is one object per line with ``time`` (ISO 8601, UTC), ``level``, ``logger``
and ``message``, then every field the record carries as ``extra`` (the per-attempt lines of
``awa.worker`` carry ``job_id``, ``kind``, ``queue``, ``attempt``, ``max_attempts``,
``outcome``, ``duration_s``, ``error_type`` and ``error``), and ``exception`` with the
traceback when there is one. The values are exact; the characters JSON leaves raw that a
terminal would obey (DEL, C1, format characters) are written as ``\\u`` escapes. It is the
standard library's ``json`` over the record's own attributes, so no JSON-logging dependency
for every install.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import datetime, timezone
from typing import Any, TextIO

from awa.escaping import printable, printable_json

__all__ = ["POOL_LOGGER", "TRACEBACK_PREFIX", "JsonFormatter", "TextFormatter", "configure_logging"]

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
#: what starts each line of a traceback in the text form (a record starts with its time)
TRACEBACK_PREFIX = "  | "
#: psycopg's pool: held back below ERROR for the worker's whole run. Its connection errors
#: (several lines each, one per reconnect attempt, about a second apart) would repeat what the
#: worker says once itself: the one-line error of an unreachable database at start, and during
#: an outage one WARNING when it is lost and one INFO when it is back
#: (``awa.runtime.service_failures``)
POOL_LOGGER = "psycopg.pool"

# what every LogRecord has: anything else on a record came as ``extra``
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}


class TextFormatter(logging.Formatter):
    """``time LEVEL logger: message`` on one line, then any traceback on lines that start
    with ``TRACEBACK_PREFIX``; everything escaped (``awa.escaping.printable``)."""

    def __init__(self, fmt: str = TEXT_FORMAT, datefmt: str | None = None) -> None:
        super().__init__(fmt, datefmt)

    def format(self, record: logging.LogRecord) -> str:
        record.message = record.getMessage()
        if self.usesTime():
            record.asctime = self.formatTime(record, self.datefmt)
        lines = [printable(self.formatMessage(record))]
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        for block in (record.exc_text, record.stack_info and self.formatStack(record.stack_info)):
            if block:
                # split on newlines alone: a CR or U+2028 in an exception's text is escaped
                lines += [TRACEBACK_PREFIX + printable(line) for line in block.split("\n")]
        return "\n".join(lines)


class JsonFormatter(logging.Formatter):
    """One JSON object per record, its ``extra`` fields as keys."""

    def format(self, record: logging.LogRecord) -> str:
        document: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, timezone.utc).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                document[key] = value
        if record.exc_info:
            document["exception"] = self.formatException(record.exc_info)
        return printable_json(json.dumps(document, default=str, ensure_ascii=False))


def configure_logging(level: str, log_format: str, stream: TextIO | None = None) -> None:
    """Send every record at ``level`` or above to ``stream`` (stderr), as text or JSON,
    replacing the handlers the root logger had."""
    handler = logging.StreamHandler(stream or sys.stderr)
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(TextFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    logging.getLogger(POOL_LOGGER).setLevel(logging.ERROR)
