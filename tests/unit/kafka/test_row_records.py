"""``RowRecords`` gives exactly the records of the full ``ResultKey``, ``ResultChange`` and
``ViewRow`` encodings, whatever the kinds of a row's values."""

from __future__ import annotations

import datetime
import uuid
from typing import Any

import pytest

from tests.unit.kafka.test_avro_registry import DictRegistry
from workers.edn import keyword
from workers.kafka.avro import AvroCodec
from workers.kafka.messages import row_to_avro
from workers.kafka.row_records import RowRecords, record_headers
from workers.kafka.views import MARKER

ROWS: list[tuple[Any, ...]] = [
    (1, 2, 3),
    (1, 1.0, True),
    (0, -1, 2**63 - 1, -(2**63), 63, 64, -64, -65, 8191, 8192, -8193, 2**20, -(2**40)),
    (2**63, -(2**63) - 1, 2**70),  # outside 64 bits: fastavro makes them doubles
    (float("inf"), float("-inf"), float("nan"), 0.1),
    (True, False, "true", 1, 0),
    ("Ivan", "", "ключ", keyword("g/to"), False, -0.0, 1e300),
    (datetime.datetime(2024, 5, 6, 7, 8, 9, tzinfo=datetime.UTC), datetime.date(2024, 5, 6),
     uuid.UUID("0b7d6d4e-3f43-4c4b-9d50-1b2c3d4e5f60")),
    (frozenset({1, "a"}), (1, "x", 2.5), {keyword("p/name"): "Ivan"}, None),
    tuple(range(200)),  # more than one varint byte of items
    MARKER,
]
QUERIES = ["q", "triangle-" + "x" * 100, "запрос"]
KEYS, CHANGES, VIEWS = AvroCodec("result_key"), AvroCodec("result_change"), AvroCodec("view_row")


def _key(row: tuple[Any, ...]) -> bytes:
    return KEYS.encode({"values": row_to_avro(row)})


def _change(query: str, row: tuple[Any, ...], weight: int, tx_first: int, tx_last: int,
            snapshot: bool) -> bytes:
    return CHANGES.encode({"query": query, "values": row_to_avro(row), "weight": weight,
                           "tx_first": tx_first, "tx_last": tx_last, "snapshot": snapshot})


def _view(query: str, row: tuple[Any, ...], weight: int, tx_last: int,
          registration: int) -> bytes:
    return VIEWS.encode({"query": query, "values": row_to_avro(row), "weight": weight,
                         "tx_last": tx_last, "registration": registration})


@pytest.mark.parametrize("row", ROWS)
@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize(("weight", "tx_first", "tx_last", "registration"), [
    (1, 0, 0, 0), (-1, 1000, 1900, 3), (5, 2**40, 2**40 + 7, 2**33), (-300, 63, 64, 127)])
def test_records_are_the_full_encodings(row: tuple[Any, ...], query: str, weight: int,
                                        tx_first: int, tx_last: int, registration: int) -> None:
    records = RowRecords()
    change_headers = record_headers(query, registration, tx_last, tx_first)
    view_headers = record_headers(query, registration, tx_last)
    for snapshot in (False, True):
        assert records.change(query, registration, row, weight, tx_first, tx_last,
                              snapshot) == (_key(row), _change(query, row, weight, tx_first,
                                                               tx_last, snapshot),
                                            change_headers)
    for view_weight in (0, 1, abs(weight)):
        change, view = records.change_and_view(query, registration, row, weight, view_weight,
                                               tx_first, tx_last)
        assert change == (_key(row), _change(query, row, weight, tx_first, tx_last, False),
                          change_headers)
        assert view == (_key(row), _view(query, row, view_weight, tx_last, registration)
                        if view_weight else None, view_headers)
        assert records.view(query, registration, row, view_weight, tx_last) == view
    assert records.view(query, registration, row, 1, tx_last, key=b"k")[0] == b"k"
    assert records.view_marker(query, registration, tx_last) == (
        _key(MARKER), _view(query, MARKER, 0, tx_last, registration), view_headers)


def test_headers_are_made_anew_in_a_new_transaction() -> None:
    records = RowRecords()
    first = records.change("q", 1, (1,), 1, 10, 20, False)[2]
    assert records.change("q", 1, (2,), 1, 10, 20, False)[2] is first
    records.begin()
    assert records.change("q", 1, (1,), 1, 10, 20, False)[2] is not first


def test_records_framed_for_a_schema_registry_are_the_full_encodings() -> None:
    registry = DictRegistry()
    keys, changes = AvroCodec("result_key", registry), AvroCodec("result_change", registry)
    views = AvroCodec("view_row", registry)
    row = (1, 1.0, True, "x")
    change, view = RowRecords(registry).change_and_view("q", 3, row, -1, 2, 10, 20)
    values = row_to_avro(row)
    assert change[:2] == (keys.encode({"values": values}), changes.encode({
        "query": "q", "values": values, "weight": -1, "tx_first": 10, "tx_last": 20,
        "snapshot": False}))
    assert view[1] == views.encode({"query": "q", "values": values, "weight": 2,
                                    "tx_last": 20, "registration": 3})
    assert view[1] is not None and view[1][:1] == b"\x00"  # the Confluent framing
