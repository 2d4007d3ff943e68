"""The records of a query's result rows as :class:`~workers.kafka.sink.ResultSink` writes
them — key, value and headers of a row's change and view records — encoded apart from the
producer, so that a tick's per-row cost can be timed without a broker
(``python -m bench codec``)."""

from __future__ import annotations

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

Headers = list[tuple[str, str | bytes | None]]
Record = tuple[bytes, bytes | None, Headers]  # key, value (None: a tombstone), headers


class RowRecords:
    """Encodes result rows' records: a row's values once for its key, change and view.
    Headers are made once per query and tick of a transaction (:meth:`begin` starts the
    next)."""

    def __init__(self, registry: SchemaRegistry | None = None) -> None:
        self._keys = AvroCodec("result_key", registry)
        self._changes = AvroCodec("result_change", registry)
        self._views = AvroCodec("view_row", registry)
        self._headers: dict[tuple[Any, ...], Headers] = {}

    def begin(self) -> None:
        """A new transaction: the headers made for the last one are let go."""
        self._headers = {}

    def change(self, query: str, registration: int, row: Row, weight: int, tx_first: int,
               tx_last: int, snapshot: bool) -> Record:
        return self._change(query, registration, row_to_avro(row), weight, tx_first, tx_last,
                            snapshot)

    def change_and_view(self, query: str, registration: int, row: Row, weight: int,
                        view_weight: int, tx_first: int, tx_last: int
                        ) -> tuple[Record, Record]:
        """A change row and the row's weight in the view now (:meth:`view`)."""
        values = row_to_avro(row)
        change = self._change(query, registration, values, weight, tx_first, tx_last, False)
        return change, (change[0], self._view(query, values, view_weight, tx_last,
                                              registration) if view_weight else None,
                        self._tick_headers(query, registration, tx_last))

    def view(self, query: str, registration: int, row: Row, weight: int, tx_last: int,
             key: bytes | None = None) -> Record:
        """A row's weight in the view now; weight 0: it left (a tombstone).  ``key``: the
        row's key if already encoded."""
        values = row_to_avro(row)
        return (key or self._key(values),
                self._view(query, values, weight, tx_last, registration) if weight else None,
                self._tick_headers(query, registration, tx_last))

    def view_marker(self, query: str, registration: int, tx_last: int) -> Record:
        """The last record of the tick in a view topic: the view is complete at tx_last."""
        values = row_to_avro(MARKER)
        return (self._key(values), self._view(query, values, 0, tx_last, registration),
                record_headers(query, registration, tx_last))

    def _change(self, query: str, registration: int, values: list[Any], weight: int,
                tx_first: int, tx_last: int, snapshot: bool) -> Record:
        return (self._key(values),
                self._changes.encode({"query": query, "values": values, "weight": weight,
                                      "tx_first": tx_first, "tx_last": tx_last,
                                      "snapshot": snapshot}),
                self._tick_headers(query, registration, tx_last, tx_first))

    def _key(self, values: list[Any]) -> bytes:
        return self._keys.encode({"values": values})

    def _view(self, query: str, values: list[Any], weight: int, tx_last: int,
              registration: int) -> bytes:
        return self._views.encode({"query": query, "values": values, "weight": weight,
                                   "tx_last": tx_last, "registration": registration})

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
