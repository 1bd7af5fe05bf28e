"""How a worker process writes its log: one line per record on stderr, as text or as JSON.

The JSON form is one object per line with ``time`` (ISO 8601, UTC), ``level``, ``logger``
and ``message``, then every field the record carries as ``extra`` (the per-attempt lines of
``awa.worker`` carry ``job_id``, ``kind``, ``queue``, ``attempt``, ``max_attempts``,
``outcome``, ``duration_s``, ``error_type`` and ``error``), and ``exception`` with the
traceback when there is one. It is the standard library's ``json`` over the record's own
attributes: twenty lines, so no JSON-logging dependency for every install.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import datetime, timezone
from typing import Any, TextIO

__all__ = ["POOL_LOGGER", "JsonFormatter", "configure_logging"]

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
#: psycopg's pool: while the worker starts, its connection errors (several lines each) would
#: repeat the one-line error the worker reports itself, so they are held back until the
#: database has answered once (``awa.worker.run``)
POOL_LOGGER = "psycopg.pool"

# what every LogRecord has: anything else on a record came as ``extra``
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}


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
        return json.dumps(document, default=str, ensure_ascii=False)


def configure_logging(level: str, log_format: str, stream: TextIO | None = None) -> None:
    """Send every record at ``level`` or above to ``stream`` (stderr), as text or JSON,
    replacing the handlers the root logger had."""
    handler = logging.StreamHandler(stream or sys.stderr)
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    logging.getLogger(POOL_LOGGER).setLevel(logging.ERROR)
