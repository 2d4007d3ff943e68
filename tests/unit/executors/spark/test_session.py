"""Starting Spark: the error when it cannot start says what helps."""

from __future__ import annotations

import sys

import pytest

from workers.errors import ErrorCode, WorkersError
from workers.executors.spark import spark_session


def test_missing_pyspark_asks_for_a_reinstall_not_an_extra(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyspark.sql", None)  # its import fails
    with pytest.raises(WorkersError, match=r"reinstall deltalog .* or use executor=local") as err:
        spark_session()
    assert err.value.code == ErrorCode.SPARK
    assert "[spark]" not in str(err.value)
