"""The records of a query's result rows as :class:`~workers.kafka.sink.ResultSink` writes
them — key, value and headers of a row's change and view records — encoded apart from the
producer, so that a tick's per-row cost can be timed without a broker
(``python -m bench codec``)."""

from __future__ import annotations

import struct
from typing import Any

from workers.kafka.avro import AvroCodec, SchemaRegistry
from workers.kafka.messages import row_to_avro
from workers.kafka.views import MARKER
from workers.zset.row import Row

# Headers of every change and view record (docs/pipeline.md, "The record contract"), decimal
# text but the query's name: the registration it belongs to, so that a subscriber can tell
# the changes after its snapshot from those of an earlier registration of the same name, and
# the tick's transactions, so that any client can route and position a record unread.
QUERY_HEADER = "deltalog.query"
REGISTRATION_HEADER = "deltalog.registration"
TX_FIRST_HEADER = "deltalog.tx_first"
TX_LAST_HEADER = "deltalog.tx_last"

_MIN_LONG, _MAX_LONG = -(2**63), 2**63 - 1
_DOUBLE = struct.Struct("<d")
_ONE_BYTE = [bytes((i,)) for i in range(0x80)]
# the arms of the Value union a row's values take, their indexes as Avro longs
_LONG_ARM, _DOUBLE_ARM, _STRING_ARM, _BOOLEAN_ARM = _ONE_BYTE[0:8:2]

Headers = list[tuple[str, str | bytes | None]]
Record = tuple[bytes, bytes | None, Headers]  # key, value (None: a tombstone), headers


class RowRecords:
    """Encodes result rows' records.  A row's values are encoded once, as its key's body, and
    its change and view values spliced around them: Avro encodes a record as its fields'
    encodings end to end, ``values`` is the same array in ``ResultKey``, ``ResultChange`` and
    ``ViewRow``, and the fields before it (the query) and after it (weight, transactions) are
    encoded once per transaction, as the headers are (:meth:`begin` starts the next)."""

    def __init__(self, registry: SchemaRegistry | None = None) -> None:
        self._keys = AvroCodec("result_key", registry)
        self._changes = AvroCodec("result_change", registry)
        self._views = AvroCodec("view_row", registry)
        self._headers: dict[tuple[Any, ...], Headers] = {}
        # (schema, query, the fields after the values) -> the encodings before and after them
        self._around: dict[tuple[Any, ...], tuple[bytes, bytes]] = {}

    def begin(self) -> None:
        """A new transaction: what was made for the last one is let go."""
        self._headers = {}
        self._around = {}

    def change(self, query: str, registration: int, row: Row, weight: int, tx_first: int,
               tx_last: int, snapshot: bool) -> Record:
        return self._change(query, registration, self._values(row), weight, tx_first, tx_last,
                            snapshot)

    def change_and_view(self, query: str, registration: int, row: Row, weight: int,
                        view_weight: int, tx_first: int, tx_last: int
                        ) -> tuple[Record, Record]:
        """A change row and the row's weight in the view now (:meth:`view`)."""
        values = self._values(row)
        change = self._change(query, registration, values, weight, tx_first, tx_last, False)
        return change, (change[0], self._spliced(self._views, query, values, (
            view_weight, tx_last, registration)) if view_weight else None,
                        self._tick_headers(query, registration, tx_last))

    def view(self, query: str, registration: int, row: Row, weight: int, tx_last: int,
             key: bytes | None = None) -> Record:
        """A row's weight in the view now; weight 0: it left (a tombstone).  ``key``: the
        row's key if already encoded."""
        values = self._values(row)
        return (key or self._keys.header + values, self._spliced(
            self._views, query, values, (weight, tx_last, registration)) if weight else None,
                self._tick_headers(query, registration, tx_last))

    def view_marker(self, query: str, registration: int, tx_last: int) -> Record:
        """The last record of the tick in a view topic: the view is complete at tx_last."""
        values = self._values(MARKER)
        return (self._keys.header + values,
                self._spliced(self._views, query, values, (0, tx_last, registration)),
                record_headers(query, registration, tx_last))

    def _change(self, query: str, registration: int, values: bytes, weight: int,
                tx_first: int, tx_last: int, snapshot: bool) -> Record:
        return (self._keys.header + values, self._spliced(
            self._changes, query, values, (weight, tx_first, tx_last, snapshot)),
                self._tick_headers(query, registration, tx_last, tx_first))

    def _values(self, row: Row) -> bytes:
        """The encoding of the row's ``values`` field (a key's body): here for the common
        rows, of plain values, in a third of fastavro's time; by fastavro for the others."""
        values = _plain_values(row)
        return self._keys.body({"values": row_to_avro(row)}) if values is None else values

    def _spliced(self, codec: AvroCodec, query: str, values: bytes,
                 after: tuple[int | bool, ...]) -> bytes:
        """A record of ``codec``'s schema, whose fields are the query, the values, then
        ``after``."""
        key = (codec.name, query, after)
        around = self._around.get(key)
        if around is None:
            around = self._around[key] = (codec.header + _string(query),
                                          b"".join(map(_scalar, after)))
        return around[0] + values + around[1]

    def _tick_headers(self, query: str, registration: int, tx_last: int,
                      tx_first: int | None = None) -> Headers:
        """:func:`record_headers`, made once per query and tick in a transaction."""
        key = (query, registration, tx_last, tx_first)
        headers = self._headers.get(key)
        if headers is None:
            headers = self._headers[key] = record_headers(query, registration, tx_last,
                                                          tx_first)
        return headers


def record_headers(query: str, registration: int, tx_last: int, tx_first: int | None = None
                   ) -> Headers:
    """The headers of a change (``tx_first`` given) or view record."""
    headers: Headers = [
        (QUERY_HEADER, query.encode()), (REGISTRATION_HEADER, str(registration).encode())]
    if tx_first is not None:
        headers.append((TX_FIRST_HEADER, str(tx_first).encode()))
    return [*headers, (TX_LAST_HEADER, str(tx_last).encode())]


def _plain_values(row: Row) -> bytes | None:
    """The ``values`` array of a row of longs, doubles, strings and booleans as fastavro
    encodes it, each value in the first arm of the ``Value`` union that takes it; None: a
    value of another kind (fastavro encodes it)."""
    if not row:
        return b"\x00"
    parts = [_long(len(row))]
    for value in row:
        kind = type(value)
        if kind is int:
            if not _MIN_LONG <= value <= _MAX_LONG:  # fastavro makes it a double
                return None
            parts += (_LONG_ARM, _long(value))
        elif kind is str:
            parts += (_STRING_ARM, _string(value))
        elif kind is float:
            parts += (_DOUBLE_ARM, _DOUBLE.pack(value))
        elif kind is bool:
            parts += (_BOOLEAN_ARM, _boolean(value))
        else:
            return None
    parts.append(b"\x00")  # the array's end
    return b"".join(parts)


def _scalar(value: int | bool) -> bytes:
    """Avro's boolean or long."""
    return _boolean(value) if type(value) is bool else _long(value)


def _boolean(value: bool) -> bytes:
    return b"\x01" if value else b"\x00"


def _long(value: int) -> bytes:
    """Avro's long: zigzag, then base 128, the low seven bits first."""
    zigzag = (value << 1) ^ (value >> 63)
    if zigzag < 0x80:
        return _ONE_BYTE[zigzag]
    if zigzag < 0x4000:
        return bytes((zigzag & 0x7F | 0x80, zigzag >> 7))
    out = bytearray()
    while zigzag > 0x7F:
        out.append(zigzag & 0x7F | 0x80)
        zigzag >>= 7
    out.append(zigzag)
    return bytes(out)


def _string(text: str) -> bytes:
    """Avro's string: its UTF-8 length as a long, then the UTF-8."""
    data = text.encode()
    return _long(len(data)) + data
