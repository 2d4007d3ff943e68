"""The JSON log format: one object per line with time, level, logger, message and context."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from datetime import datetime

import pytest

from workers.errors import WorkersError
from workers.logs import JsonFormatter, configure


def _record(**extra: object) -> logging.LogRecord:
    record = logging.LogRecord("workers.runtime.worker", logging.WARNING, __file__, 1,
                               "tick %d..%d slow", (3, 7), None)
    record.__dict__.update(extra)
    return record


def test_json_line_has_time_level_logger_and_message() -> None:
    line = JsonFormatter().format(_record())
    entry = json.loads(line)
    assert "\n" not in line
    assert {k: entry[k] for k in ("level", "logger", "message")} == {
        "level": "WARNING", "logger": "workers.runtime.worker", "message": "tick 3..7 slow"}
    assert datetime.fromisoformat(entry["time"]).utcoffset() is not None


def test_context_attributes_are_fields_and_others_are_not() -> None:
    entry = json.loads(JsonFormatter().format(
        _record(query="tri", tx_first=3, tx_last=7, worker="w1", other="x")))
    assert {k: entry[k] for k in ("query", "tx_first", "tx_last", "worker")} == {
        "query": "tri", "tx_first": 3, "tx_last": 7, "worker": "w1"}
    assert "other" not in entry


def test_extra_passed_to_a_log_call_reaches_the_line(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, "workers.test"):
        logging.getLogger("workers.test").info("committed", extra={"query": "tri", "tx_last": 9})
    entry = json.loads(JsonFormatter().format(caplog.records[-1]))
    assert (entry["message"], entry["query"], entry["tx_last"]) == ("committed", "tri", 9)


def test_exception_is_one_field() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        record = _record()
        record.exc_info = sys.exc_info()
    entry = json.loads(JsonFormatter().format(record))
    assert entry["exception"].startswith("Traceback") and "ValueError: boom" in entry["exception"]


LOG_ONE_LINE = """
import logging, os, sys
from workers.logs import configure
configure(logging.INFO, sys.argv[1] or None, os.environ)
logging.getLogger("workers.x").info("hello", extra={"query": "tri"})
"""


@pytest.mark.parametrize(("flag", "env", "json_line"), [
    ("", {}, False), ("", {"DELTALOG_LOG_FORMAT": "json"}, True),
    ("text", {"DELTALOG_LOG_FORMAT": "json"}, False), ("json", {}, True),
], ids=["default text", "env json", "flag beats env", "flag json"])
def test_configure_picks_the_format(flag: str, env: dict[str, str], json_line: bool) -> None:
    """In a fresh process: the test runner's own handlers would make basicConfig a no-op."""
    done = subprocess.run([sys.executable, "-c", LOG_ONE_LINE, flag], env=env, text=True,
                          capture_output=True, check=True)
    if json_line:
        assert json.loads(done.stderr)["query"] == "tri"
    else:
        assert done.stderr.endswith(" INFO workers.x: hello\n")


def test_unknown_log_format_is_refused() -> None:
    with pytest.raises(WorkersError, match="DELTALOG_LOG_FORMAT='xml': the log format is one of"):
        configure(logging.INFO, None, {"DELTALOG_LOG_FORMAT": "xml"})
