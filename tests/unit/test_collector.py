"""The collector is paused inside the block only, and left as the caller had it."""

from __future__ import annotations

import gc

import pytest

from workers.collector import collector_paused


def test_paused_inside_and_enabled_again_after_even_on_error() -> None:
    assert gc.isenabled()
    with pytest.raises(ValueError), collector_paused():
        assert not gc.isenabled()
        raise ValueError
    assert gc.isenabled()


def test_a_caller_that_disabled_it_keeps_it_disabled() -> None:
    gc.disable()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
