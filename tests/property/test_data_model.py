"""Oracle on Datomic's data model: random streams of transactions naming entities by tempid
(strings, negative longs, maps without ``:db/id``), upserting by a unique identity, naming
entities by lookup ref and retracting them — the engine's database equals a naive reference
resolution written here (sharing nothing with :mod:`workers.db.resolve` but the documented id
formula), refusals agree, and every registered query's integrated change stream equals a
from-scratch evaluation after every transaction, one transaction a tick and in batches."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workers import edn
from workers.db.resolve import allocated_id
from workers.engine import Engine
from workers.errors import TransactionError
from workers.testing import ReferenceDb, evaluate_from_scratch
from workers.zset import add_into

ADD, RETRACT, RETRACT_ENTITY = (edn.keyword(k) for k in ("db/add", "db/retract",
                                                           "db/retractEntity"))
DB_ID, KEY, VAL, REF = (edn.keyword(k) for k in ("db/id", "u/key", "u/val", "u/ref"))
SCHEMA = ("[{:db/ident :u/key :db/unique :db.unique/identity :db/cardinality "
          ":db.cardinality/one} {:db/ident :u/ref :db/valueType :db.type/ref "
          ":db/cardinality :db.cardinality/many}]")
QUERIES = [
    "[:find ?e ?k :where [?e :u/key ?k]]",
    "[:find ?k ?v :where [?e :u/key ?k] [?e :u/val ?v]]",
    "[:find ?v :where [[:u/key 1] :u/val ?v]]",
    "[:find ?k1 ?k2 :where [?a :u/ref ?b] [?a :u/key ?k1] [?b :u/key ?k2]]",
    "[:find (count ?e) :where [?e :u/val _]]",
]

tempids = st.sampled_from(["a", "b", -1, -2])
explicit = st.sampled_from([1, 2, 3])
lookups = st.sampled_from([0, 1, 2]).map(lambda k: [KEY, k])
entities = st.one_of(tempids, explicit, lookups)
keys, values = st.sampled_from([0, 1, 2]), st.sampled_from([5, 6])


@st.composite
def entity_maps(draw: st.DrawFn) -> dict[Any, Any]:
    attrs: dict[Any, Any] = {}
    if draw(st.booleans()):
        attrs[DB_ID] = draw(entities)
    if draw(st.booleans()):
        attrs[KEY] = draw(keys)
    if draw(st.booleans()) or len(attrs) < 2:
        attrs[VAL] = draw(values)
    if draw(st.booleans()):
        attrs[REF] = draw(st.one_of(tempids, explicit))
    return attrs


ops = st.one_of(
    entity_maps(),
    st.tuples(st.just(ADD), entities, st.just(VAL), values).map(list),
    st.tuples(st.just(ADD), entities, st.just(REF), st.one_of(tempids, explicit)).map(list),
    st.tuples(st.just(RETRACT), st.one_of(explicit, lookups), st.just(VAL), values).map(list),
    st.tuples(st.just(RETRACT_ENTITY), st.one_of(explicit, lookups)).map(list),
)
streams = st.lists(st.lists(ops, min_size=1, max_size=4), min_size=1, max_size=8)


class Refused(Exception):
    """The reference refuses the transaction."""


class _Anonymous:
    """A map without :db/id: a tempid of its own."""


def resolved(tx: Sequence[Any], datoms: set[Any], tx_id: int) -> list[list[Any]]:
    """The transaction's plain ops, as Datomic resolves them (naively, over the set of
    datoms); raises :class:`Refused`."""
    adds: list[list[Any]] = []
    retracts: list[list[Any]] = []
    retract_entities: list[Any] = []
    for op in tx:
        if isinstance(op, dict):
            e = op.get(DB_ID, _Anonymous())
            adds += [[e, a, v] for a, v in op.items() if a != DB_ID]
        elif op[0] == ADD:
            adds.append(list(op[1:]))
        elif op[0] == RETRACT:
            retracts.append(list(op[1:]))
        else:
            retract_entities.append(op[1])

    def owner(k: Any) -> list[Any]:
        return [e for e, a, v in datoms if a == KEY and v == k and type(v) is type(k)]

    def entity(x: Any) -> Any:
        if isinstance(x, list):
            found = owner(x[1])
            if not found:
                raise Refused
            return found[0]
        if isinstance(x, str | _Anonymous) or (isinstance(x, int) and x < 0):
            return ("tempid", x)
        return x

    adds = [[entity(e), a, entity(v) if a == REF else v] for e, a, v in adds]
    retracts = [[entity(e), a, v] for e, a, v in retracts]
    retract_entities = [entity(e) for e in retract_entities]
    # Upserts: tempids asserting one key are one entity, the key's owner if any.
    same: dict[Any, Any] = {}

    def root(t: Any) -> Any:
        while same.get(t, t) != t:
            t = same[t]
        return t

    owners: dict[Any, Any] = {}
    for k in {v for _, a, v in adds if a == KEY}:
        asserting = [e for e, a, v in adds if a == KEY and v == k]
        temporary = [e for e in asserting if isinstance(e, tuple)]
        for t in temporary[1:]:
            same[root(t)] = root(temporary[0])
        for found in [e for e in asserting if not isinstance(e, tuple)] + owner(k):
            if temporary and owners.setdefault(root(temporary[0]), found) != found:
                raise Refused
    ids: dict[Any, Any] = {}
    for x in [x for e, _, v in adds + retracts for x in (e, v)] + retract_entities:
        if isinstance(x, tuple) and root(x) not in ids:
            top = root(x)
            ids[top] = owners.get(top, allocated_id(tx_id, sum(
                1 for t in ids if t not in owners)))
    # Merged roots found their owner under another root: follow the merge.
    plain = [[ADD, *(ids[root(x)] if isinstance(x, tuple) else x for x in d)] for d in adds]
    plain += [[RETRACT, *(ids[root(x)] if isinstance(x, tuple) else x for x in d)]
              for d in retracts]
    plain += [[RETRACT_ENTITY, ids[root(e)] if isinstance(e, tuple) else e]
              for e in retract_entities]
    return plain


def apply(reference: ReferenceDb, tx: Sequence[Any], tx_id: int) -> bool:
    """The reference's transaction: resolved, applied (refs to a retracted entity go with
    it), then each key held by one entity at most."""
    try:
        plain = resolved(tx, reference.datoms, tx_id)
    except Refused:
        return False
    retracted = {op[1] for op in plain if op[0] == RETRACT_ENTITY}
    plain += [[RETRACT, *d] for d in reference.datoms if d[1] == REF and d[2] in retracted]
    before = set(reference.datoms)
    if not reference.transact(plain):
        return False
    held = [v for _, a, v in reference.datoms if a == KEY]
    if len(held) != len(set(held)):
        reference.datoms = before
        return False
    return True


def data(datoms: Any) -> set[Any]:
    return {d for d in datoms if not edn.dumps(d[1]).startswith(":db/")}


@pytest.mark.parametrize("batched", [False, True], ids=["tick-per-tx", "batches"])
@settings(max_examples=60)
@given(stream=streams)
def test_tempids_upserts_and_lookup_refs_match_the_reference(batched: bool,
                                                             stream: list[list[Any]]) -> None:
    engine = Engine(bulk_datoms=1)
    engine.transact(SCHEMA)
    reference = ReferenceDb([KEY])
    views = [engine.register(str(i), query) for i, query in enumerate(QUERIES)]
    for tx_id, tx in enumerate(stream, 2):
        accepted = apply(reference, tx, tx_id)
        if batched:
            changes, refused = engine.transact_many([(tx, tx_id)])
            assert (not refused) == accepted, (tx, refused)
        else:
            try:
                changes = engine.transact(tx)
            except TransactionError as error:
                assert not accepted, (tx, error)
                changes = {}
            else:
                assert accepted, tx
        assert data(engine.db.datoms()) == data(reference.datoms), tx
        for i, query in enumerate(QUERIES):
            add_into(views[i], changes.get(str(i), {}))
            assert views[i] == evaluate_from_scratch(query, reference.datoms), (query, tx)
