"""Big array work with the process's freed memory kept for reuse, then given back at the end.

glibc hands a freed block of 128 KiB or more (its mmap threshold, which it raises as it goes,
up to 32 MiB) straight back to the system, and trims its heap's top once 128 KiB are free
there.  An evaluation allocates and frees arrays of tens of MB for every piece of every
level, so each piece faults its memory in again, page by page.  That is cheap on a bare
machine (zeroing, ~0.1-0.2 s a GB) and dear on a VM that takes the pages the guest frees
back to the host (~1-2 s a GB on the one ``docs/spark.md`` measures).  Inside
:func:`reused_heap` freed memory stays in the heap, where the next piece finds it; when the
last such block ends, the thresholds are set back to glibc's default values (fixed there:
glibc no longer raises its mmap threshold as it goes) and what is free is trimmed: between
blocks the process holds no more than it would have.  Off Linux, or on a C library
without ``mallopt`` and ``malloc_trim``, it does nothing.
"""

from __future__ import annotations

import ctypes
import functools
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt's parameters (malloc.h)
DEFAULT_THRESHOLD = 128 * 1024  # both thresholds' glibc default
KEPT_THRESHOLD = (1 << 31) - 1  # the most mallopt's int takes: nothing freed goes back


class _Heap:
    """glibc's allocator, kept from trimming while any :func:`reused_heap` block runs."""

    def __init__(self) -> None:
        libc = ctypes.CDLL(None) if sys.platform.startswith("linux") else None
        self._libc = libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None
        self._lock = threading.Lock()
        self._blocks = 0

    @property
    def glibc(self) -> bool:
        """Whether there is glibc's heap to keep (else every block does nothing)."""
        return self._libc is not None

    def enter(self) -> None:
        with self._lock:
            self._blocks += 1
            if self._blocks == 1:
                self._thresholds(KEPT_THRESHOLD)

    def leave(self) -> None:
        with self._lock:
            self._blocks -= 1
            if self._blocks == 0:
                self._thresholds(DEFAULT_THRESHOLD)
                if self._libc is not None:
                    self._libc.malloc_trim(0)

    def _thresholds(self, size: int) -> None:
        if self._libc is not None:
            self._libc.mallopt(_M_MMAP_THRESHOLD, ctypes.c_int(size))
            self._libc.mallopt(_M_TRIM_THRESHOLD, ctypes.c_int(size))


_HEAP = _Heap()


@contextmanager
def reused_heap() -> Iterator[None]:
    """Freed memory reused within the block, given back to the system after it."""
    _HEAP.enter()
    try:
        yield
    finally:
        _HEAP.leave()


def reusing_heap(task: Callable[P, Iterator[T]]) -> Callable[P, Iterator[T]]:
    """``task``, a generator function, run as a :func:`reused_heap` block (until it ends or
    is closed)."""
    @functools.wraps(task)
    def within(*args: P.args, **kwargs: P.kwargs) -> Iterator[T]:
        with reused_heap():
            yield from task(*args, **kwargs)
    return within
