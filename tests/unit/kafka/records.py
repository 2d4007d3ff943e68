"""One fixed, representative record per Avro schema (shared by the codec and registry tests)."""

from __future__ import annotations

import uuid
from typing import Any

UUID = uuid.UUID("12345678-1234-5678-1234-567812345678")

RECORDS: dict[str, dict[str, Any]] = {
    "transaction": {
        "ops": [
            {"op": "ADD", "e": 1, "a": "name", "v": "Ivan", "old": None},
            {"op": "ADD", "e": "tmp", "a": "age", "v": 30, "old": None},
            {"op": "ADD", "e": {"name": "ivan"}, "a": "g/to", "v": {"name": "petr"}, "old": None},
            {"op": "ADD", "e": UUID.bytes, "a": "score", "v": 1.5, "old": None},
            {"op": "ADD", "e": 2, "a": "alive", "v": True, "old": None},
            {"op": "ADD", "e": 2, "a": "born", "v": {"micros": 1_700_000_000_123_456},
             "old": None},
            {"op": "RETRACT", "e": 2, "a": "id", "v": UUID.bytes, "old": None},
            {"op": "RETRACT_ATTRIBUTE", "e": 3, "a": "name", "v": None, "old": None},
            {"op": "RETRACT_ENTITY", "e": 4, "a": None, "v": None, "old": None},
            {"op": "ADD", "e": {"attribute": "p/email", "value": "a@x"}, "a": "p/friend",
             "v": {"attribute": "p/email", "value": "b@x"}, "old": None},
            {"op": "CAS", "e": -1, "a": "age", "v": 31, "old": 30},
        ],
        "source": "unit-test",
        "edn": None,
    },
    "query_registration": {"name": "people-by-age", "edn": "[:find ?n :in $ ?age :where "
                           "[?e :name ?n] [?e :age ?age]]", "inputs": ["30"]},
    "result_change": {"query": "tri", "values": [1, 2.5, "x", False, {"name": "k/w"},
                                                 {"micros": -1}, UUID.bytes,
                                                 {"elements": [3, "x"]},
                                                 {"text": '{:name "Ivan"}'}],
                      "weight": -1, "tx_first": 10, "tx_last": 12, "snapshot": True},
    "result_key": {"values": [7, "seven", {"name": "seven"}, {"text": "nil"}]},
    "progress": {"query": "tri", "registration": 3, "tx_last": 41, "worker": "w-1"},
    "dead_letter": {"topic": "deltalog.tx", "partition": 0, "offset": 17, "code": "undecodable",
                    "reason": "not a deltalog Avro record", "payload": b"\xff\x00garbage",
                    "worker": "w-1"},
    "view_row": {"query": "tri", "values": [1, "x", {"items": [2, 3]}], "weight": 2,
                 "tx_last": 12, "registration": 3},
    "tx_report": {"tx": 57, "tempids": [{"tempid": "ivan", "id": (1 << 62) + (57 << 20)},
                                        {"tempid": -1, "id": 3}]},
}

# The transaction record as its first schema (schemas/previous/transaction.1.avsc) wrote it:
# golden bytes avro/transaction.1.bin; read now with the new fields' defaults.
TRANSACTION_1: dict[str, Any] = {
    "ops": [{**op, "old": None} for op in RECORDS["transaction"]["ops"][:9]],
    "source": "unit-test",
    "edn": None,
}
