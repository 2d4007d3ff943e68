"""A reused heap: memory freed inside a block stays in the process for the next allocation,
and goes back to the system when the (outermost) block ends — as glibc's defaults give it
back at once outside any block."""

from __future__ import annotations

import os
from collections.abc import Iterator

import numpy as np
import pytest

from workers.executors.heap import _HEAP, reused_heap, reusing_heap

MB = 1 << 20
ARRAY_BYTES = 64 * MB


@pytest.fixture(autouse=True)
def _glibc() -> None:
    """These tests measure glibc's heap: on a machine without it they fail, saying so."""
    assert _HEAP.glibc, "no glibc mallopt/malloc_trim here: deltalog's tests run on glibc Linux"


def resident() -> int:
    """This process's resident memory, bytes."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def allocate_and_free() -> None:
    """An array of ``ARRAY_BYTES`` written (its pages resident), then freed."""
    array = np.ones(ARRAY_BYTES // 8)
    del array


def test_outside_a_block_a_big_freed_array_goes_back_at_once() -> None:
    before = resident()
    allocate_and_free()
    assert resident() - before < ARRAY_BYTES // 4


def test_inside_a_block_it_is_kept_and_given_back_when_the_block_ends() -> None:
    before = resident()
    with reused_heap():
        allocate_and_free()
        kept = resident()
        allocate_and_free()  # the kept memory again: no more is taken
        assert resident() - kept < ARRAY_BYTES // 4
    assert kept - before > ARRAY_BYTES * 3 // 4
    assert resident() - before < ARRAY_BYTES // 4


def test_the_heap_is_kept_until_the_outermost_block_ends() -> None:
    before = resident()
    with reused_heap():
        with reused_heap():
            allocate_and_free()
        assert resident() - before > ARRAY_BYTES * 3 // 4
    assert resident() - before < ARRAY_BYTES // 4


def test_a_task_keeps_the_heap_while_its_generator_runs() -> None:
    @reusing_heap
    def task(count: int) -> Iterator[int]:
        for i in range(count):
            allocate_and_free()
            yield i

    before = resident()
    running = task(3)
    assert next(running) == 0
    assert resident() - before > ARRAY_BYTES * 3 // 4
    assert list(running) == [1, 2]
    assert resident() - before < ARRAY_BYTES // 4
    abandoned = task(3)
    next(abandoned)
    abandoned.close()  # a task Spark stops early ends its block too
    assert resident() - before < ARRAY_BYTES // 4
