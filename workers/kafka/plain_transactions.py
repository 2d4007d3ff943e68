"""The log's common transactions read without fastavro: ``Transaction`` bodies whose ops have
an entity that is a long or a string (an id, a tempid) and values that are nulls, longs,
doubles, strings or booleans — the single-datom ``[:db/add e :a v]`` a worker reads by the
hundred a tick.  fastavro's setup and schema walk for each record cost more than reading such a
record's few bytes here (``python -m bench codec``).  Anything else — other kinds of values,
or bytes that are not exactly such a record — is left to fastavro, so it is read, or refused,
as before.  The layout is the current ``schemas/transaction.avsc``'s; a body written with an
earlier version is never given here (:class:`~workers.kafka.avro.AvroCodec` checks)."""

from __future__ import annotations

import struct
from typing import Any

OP_KINDS = ("ADD", "RETRACT", "RETRACT_ATTRIBUTE", "RETRACT_ENTITY", "CAS")  # enum OpKind
# Enum and union indexes are longs, zigzag-encoded: index i is the one byte 2i (a longer
# encoding of it, which no writer makes, is left to fastavro).
_KINDS_BY_BYTE = {2 * i: kind for i, kind in enumerate(OP_KINDS)}
_DOUBLE = struct.Struct("<d")


class _NotPlain(Exception):
    """The body is not one that this module reads."""


def read_plain_transaction(body: bytes) -> dict[str, Any] | None:
    """The record fastavro would read from ``body``, or None: not a transaction of plain
    values (fastavro reads it)."""
    try:
        ops = []
        count, at = _long(body, 0)
        while count > 0:  # a negative count (a block with its size) is left to fastavro
            for _ in range(count):
                kind = _KINDS_BY_BYTE.get(body[at])
                branch = body[at + 1]
                e: int | str
                if kind is None:
                    raise _NotPlain
                if branch == 0:
                    e, at = _long(body, at + 2)
                elif branch == 2:  # the second arm: a tempid
                    e, at = _string(body, at + 2)
                else:
                    raise _NotPlain
                a, at = _optional_string(body, at)
                v, at = _value(body, at)
                old, at = _value(body, at)
                ops.append({"op": kind, "e": e, "a": a, "v": v, "old": old})
            count, at = _long(body, at)
        if count:
            raise _NotPlain
        source, at = _optional_string(body, at)
        edn, at = _optional_string(body, at)
    except (_NotPlain, IndexError, UnicodeDecodeError, struct.error):
        return None
    return {"ops": ops, "source": source, "edn": edn} if at == len(body) else None


def _long(body: bytes, at: int) -> tuple[int, int]:
    """A zigzag varint and the offset after it; longer than 64 bits: not plain."""
    byte = body[at]
    if byte < 0x80:
        return (byte >> 1) ^ -(byte & 1), at + 1
    value, shift = byte & 0x7F, 7
    while True:
        at += 1
        byte = body[at]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            break
        shift += 7
    if value >> 64:
        raise _NotPlain
    return (value >> 1) ^ -(value & 1), at + 1


def _string(body: bytes, at: int) -> tuple[str, int]:
    size, at = _long(body, at)
    end = at + size
    if size < 0 or end > len(body):
        raise _NotPlain
    return body[at:end].decode(), end


def _optional_string(body: bytes, at: int) -> tuple[str | None, int]:
    """The union ``[null, string]``."""
    branch = body[at]
    if branch == 0:
        return None, at + 1
    if branch == 2:
        return _string(body, at + 1)
    raise _NotPlain


def _value(body: bytes, at: int) -> tuple[Any, int]:
    """An op's ``v`` or ``old``: its union's arms null, long, double, string, boolean."""
    branch = body[at]
    at += 1
    if branch == 2:
        return _long(body, at)
    if branch == 0:
        return None, at
    if branch == 4:
        return _DOUBLE.unpack_from(body, at)[0], at + 8
    if branch == 6:
        return _string(body, at)
    if branch == 8 and body[at] <= 1:
        return body[at] == 1, at + 1
    raise _NotPlain
