"""``read_plain_transaction`` reads exactly what fastavro reads, or leaves the body to it."""

from __future__ import annotations

import io
from typing import Any

import fastavro
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.unit.kafka.records import RECORDS, UUID
from tests.unit.kafka.test_avro_registry import DictRegistry
from workers.kafka.avro import AvroCodec, DecodeError, load_schema
from workers.kafka.plain_transactions import OP_KINDS, read_plain_transaction

SCHEMA = load_schema("transaction")
PLAIN_ENTITIES = [0, 1, -1, 63, 64, 8191, 8192, 2**63 - 1, -(2**63), "tmp", "", "ключ"]
PLAIN_VALUES = [None, 0, 1, -1, 1.0, -0.0, 1e300, True, False, "Ivan", "", "ключ",
                2**63 - 1, -(2**63)]
OTHER_ENTITIES = [{"name": "ivan"}, UUID.bytes, {"attribute": "p/email", "value": "a@x"}]
OTHER_VALUES = [{"name": "g/to"}, {"micros": 1714979289123456}, UUID.bytes,
                {"attribute": "p/id", "value": 1}]


def _body(record: dict[str, Any]) -> bytes:
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, SCHEMA, record)
    return buffer.getvalue()


def _fastavro(body: bytes) -> Any:
    return fastavro.schemaless_reader(io.BytesIO(body), SCHEMA, SCHEMA)


def _typed(value: Any) -> Any:
    """``value`` with each leaf beside its type: ``1``, ``1.0`` and ``true`` are not equal."""
    if isinstance(value, dict):
        return {key: _typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_typed(item) for item in value]
    return (type(value), value)


def _transaction(ops: list[dict[str, Any]], source: str | None = None,
                 edn: str | None = None) -> dict[str, Any]:
    return {"ops": ops, "source": source, "edn": edn}


def _op(kind: str = "ADD", e: Any = 1, a: str | None = "g/to", v: Any = 2,
        old: Any = None) -> dict[str, Any]:
    return {"op": kind, "e": e, "a": a, "v": v, "old": old}


PLAIN = [
    _transaction([]),
    _transaction([], "bench", None),
    _transaction([], None, "[[:db/add 1 :a 2]]"),
    *[_transaction([_op(kind, e, a, v, old)], source="s")
      for kind in OP_KINDS for e in PLAIN_ENTITIES for a in ("g/to", None)
      for v in PLAIN_VALUES for old in (None, 1, "x")],
    _transaction([_op(v=value) for value in PLAIN_VALUES] * 10),  # a count of two bytes
]
OTHERS = [RECORDS["transaction"],
          *[_transaction([_op(e=e)]) for e in OTHER_ENTITIES],
          *[_transaction([_op(), _op(v=v)]) for v in OTHER_VALUES],
          *[_transaction([_op(kind="CAS", old=old)]) for old in OTHER_VALUES]]


def test_plain_transactions_are_read_as_fastavro_reads_them() -> None:
    for record in PLAIN:
        body = _body(record)
        read = read_plain_transaction(body)
        assert read is not None, record
        assert _typed(read) == _typed(_fastavro(body)) == _typed(record)


@pytest.mark.parametrize("record", OTHERS)
def test_other_values_are_left_to_fastavro(record: dict[str, Any]) -> None:
    assert read_plain_transaction(_body(record)) is None


@pytest.mark.parametrize("body", [
    _body(_transaction([_op()])) + b"\x00",  # fastavro ignores what follows the record
    _body(_transaction([_op(v=True)])).replace(b"\x08\x01", b"\x08\x02"),  # not 0 nor 1
    b"\x02\x00\x00" + b"\xff" * 10 + b"\x01",  # a varint longer than 64 bits
    b"\x01\x02",  # a block of one op, with its size: fastavro reads those
    b"\x02\x0a",  # no sixth op kind
])
def test_bodies_of_another_shape_are_left_to_fastavro(body: bytes) -> None:
    assert read_plain_transaction(body) is None


@pytest.mark.parametrize("record", [_transaction([_op(), _op(e="tmp", v="ключ")], "src"),
                                    _transaction([_op(v=1.5)])])
def test_a_truncated_body_is_undecodable_as_before(record: dict[str, Any]) -> None:
    codec = AvroCodec("transaction")
    data = codec.encode(record)
    for end in range(len(codec.header), len(data)):
        assert read_plain_transaction(data[len(codec.header):end]) is None
        with pytest.raises(DecodeError):
            codec.decode(data[:end])


def test_the_codec_reads_plain_bodies_framed_either_way() -> None:
    record = _transaction([_op(e=-1, v=1.0), _op(kind="RETRACT", e="tmp", v=True)], "src")
    for codec in (AvroCodec("transaction"), AvroCodec("transaction", DictRegistry())):
        assert _typed(codec.decode(codec.encode(record))) == _typed(record)


_LONGS = st.integers(-(2**63), 2**63 - 1)
_PLAIN_VALUES = st.none() | _LONGS | st.floats(allow_nan=False) | st.text() | st.booleans()
_VALUES = _PLAIN_VALUES | st.sampled_from(OTHER_VALUES)


@given(st.lists(st.fixed_dictionaries({
    "op": st.sampled_from(OP_KINDS), "e": _LONGS | st.text() | st.sampled_from(OTHER_ENTITIES),
    "a": st.none() | st.text(), "v": _VALUES, "old": _VALUES}), max_size=4),
    st.none() | st.text(), st.none() | st.text())
def test_any_transaction_is_read_as_fastavro_reads_it_or_left_to_it(
        ops: list[dict[str, Any]], source: str | None, edn: str | None) -> None:
    body = _body(_transaction(ops, source, edn))
    read = read_plain_transaction(body)
    plain = all(isinstance(op["e"], int | str) and not isinstance(op[value], dict | bytes)
                for op in ops for value in ("v", "old"))
    assert (read is not None) == plain
    if read is not None:
        assert _typed(read) == _typed(_fastavro(body))
