"""A shared state's dictionary in files: what its value ids stand for, for the engines that
follow the state (:mod:`~workers.executors.spark.shared`).

A version that numbered values writes them, in id order, to a file of its own
(:func:`~workers.executors.spark.state.values_name`); a compaction folds the dictionary's
base and those files into a new base, streamed a piece at a time (:func:`fold_values`), so
a follower starting reads one file and a few.  A value is a long (``payload``) or a tag and a text
(:mod:`workers.db.codec`), never a pickle: the readers are other processes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from workers.arrangements.values import Numbering, int_key
from workers.db.codec import DECODE, encode_value
from workers.executors.spark.runs import fold_runs, write_run
from workers.executors.spark.state import filesystem

VALUES_SCHEMA = pa.schema([("payload", pa.int64()), ("tag", pa.string()), ("text", pa.string())])
PIECE = 1 << 18  # values encoded, written or decoded at once


class DriverValues:
    """A writer's :class:`~workers.executors.spark.state.ValueFiles`: the values of its
    dictionary (``ids()``: the one it numbers in now), a piece at a time."""

    def __init__(self, ids: Callable[[], Numbering]) -> None:
        self._ids = ids

    def write(self, location: str, name: str, start: int, stop: int) -> None:
        ids = self._ids()
        write_values(location, name, (ids.values(np.arange(i, min(i + PIECE, stop)))
                                      for i in range(start, stop, PIECE)))

    def fold(self, location: str, names: Sequence[str], name: str) -> None:
        fold_values(location, names, name)

    def write_keys(self, location: str, values: str, first: int, name: str) -> None:
        write_run(location, values, first, name)

    def fold_keys(self, location: str, names: Sequence[str], name: str) -> None:
        fold_runs(location, names, name)


def write_values(location: str, name: str, pieces: Iterable[Sequence[Any]]) -> None:
    """Write the values of ``pieces`` (in id order) as the file ``name``."""
    fs, root = filesystem(location)
    with fs.open_output_stream(f"{root}/{name}") as sink, \
            pa.ipc.new_file(sink, VALUES_SCHEMA) as writer:
        for piece in pieces:
            writer.write_batch(_encoded(piece))


def fold_values(location: str, names: Sequence[str], name: str) -> None:
    """Write the files ``names``, one after the other, as the one file ``name`` (a piece at
    a time: the dictionary is never held whole)."""
    fs, root = filesystem(location)
    with fs.open_output_stream(f"{root}/{name}") as sink, \
            pa.ipc.new_file(sink, VALUES_SCHEMA) as writer:
        for each in names:
            with fs.open_input_file(f"{root}/{each}") as source:
                reader = pa.ipc.open_file(source)
                for i in range(reader.num_record_batches):
                    writer.write_batch(reader.get_batch(i))


def _encoded(values: Sequence[Any]) -> pa.RecordBatch:
    payloads: list[int | None] = []
    tags: list[str | None] = []
    texts: list[str | None] = []
    for value in values:
        if int_key(value) is not None:
            payloads.append(value)
            tags.append(None)
            texts.append(None)
        else:
            tag, text = encode_value(value)
            payloads.append(None)
            tags.append(tag)
            texts.append(text)
    return pa.record_batch([pa.array(payloads, pa.int64()), pa.array(tags, pa.string()),
                            pa.array(texts, pa.string())], schema=VALUES_SCHEMA)


def decoded_rows(batch: pa.RecordBatch, start: int = 0) -> list[Any]:
    """The values of a piece of a values file, from row ``start`` on."""
    payloads, tags, texts = (batch.column(i).slice(start).to_pylist() for i in range(3))
    return [payload if tag is None else DECODE[tag](text)
            for payload, tag, text in zip(payloads, tags, texts, strict=True)]
