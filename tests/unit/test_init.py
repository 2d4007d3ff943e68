"""The package's own surface: ``from workers import Engine``, without an eager engine import."""

from __future__ import annotations

import subprocess
import sys

import pytest

import workers
from workers.engine import Engine


def test_the_engine_is_exported_from_the_package() -> None:
    from workers import Engine as exported

    assert exported is Engine
    assert "Engine" in workers.__all__
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        _ = workers.Nothing  # type: ignore[attr-defined]


def test_importing_a_submodule_does_not_import_the_engine() -> None:
    check = ("import sys, workers.errors; from workers import edn; "
             "assert 'workers.engine' not in sys.modules, 'the engine was imported'")
    subprocess.run([sys.executable, "-c", check], check=True)
