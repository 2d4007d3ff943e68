"""The command line's logging: readable text (default) or one JSON object per line, for log
shippers that index fields (``--log-format json`` or ``DELTALOG_LOG_FORMAT=json``)."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from datetime import UTC, datetime

from workers.errors import ErrorCode, WorkersError

LOG_FORMAT_ENV = "DELTALOG_LOG_FORMAT"
LOG_FORMATS = ("text", "json")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# What a log call may pass with ``extra=``: the query, the tick's transactions, the worker.
CONTEXT = ("query", "tx_first", "tx_last", "worker")


class JsonFormatter(logging.Formatter):
    """``{"time", "level", "logger", "message"}``, the :data:`CONTEXT` attributes the record
    carries, and ``exception`` (the traceback text) when it has one."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        entry.update({key: getattr(record, key) for key in CONTEXT if hasattr(record, key)})
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def configure(level: int, log_format: str | None, env: Mapping[str, str]) -> None:
    """Log to stderr at ``level`` in ``log_format``, else ``$DELTALOG_LOG_FORMAT``, else text."""
    chosen = log_format or env.get(LOG_FORMAT_ENV) or "text"
    if chosen not in LOG_FORMATS:
        raise WorkersError(f"{LOG_FORMAT_ENV}={chosen!r}: the log format is one of "
                           f"{', '.join(LOG_FORMATS)}", code=ErrorCode.CONFIG)
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if chosen == "json" else logging.Formatter(TEXT_FORMAT))
    logging.basicConfig(level=level, handlers=[handler])
