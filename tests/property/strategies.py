"""Hypothesis strategies: small transaction streams with adds, retracts, retractEntity and
cardinality-one updates over a few entities, so that rows appear, vanish and reappear."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from workers.edn import keyword
from workers.testing import ReferenceDb

ADD, RETRACT, RETRACT_ENTITY = keyword("db/add"), keyword("db/retract"), keyword("db/retractEntity")
TO, NAME, AGE, TAG = keyword("g/to"), keyword("name"), keyword("age"), keyword("tag")
CARDINALITY_ONE = (NAME, AGE)
SCHEMA_TX = [{keyword("db/ident"): a, keyword("db/cardinality"): keyword("db.cardinality/one")}
             for a in CARDINALITY_ONE]

entities = st.sampled_from([1, 2, 3, 4])
datoms = st.one_of(
    st.tuples(entities, st.just(TO), entities),
    st.tuples(entities, st.just(TAG), st.sampled_from([1, 2, 3])),
    st.tuples(entities, st.just(NAME), st.sampled_from(["Ivan", "Petr", "x"])),
    st.tuples(entities, st.just(AGE), st.sampled_from([1, 2, 30])),
)


@st.composite
def ops(draw: st.DrawFn) -> list[Any]:
    kind = draw(st.sampled_from(["add", "add", "add", "retract", "retract", "retract-entity"]))
    if kind == "retract-entity":
        return [RETRACT_ENTITY, draw(entities)]
    e, a, v = draw(datoms)
    return [ADD if kind == "add" else RETRACT, e, a, v]


tx_streams = st.lists(st.lists(ops(), min_size=1, max_size=4), min_size=1, max_size=12)

# Plain transactions (adds and retracts) over many entities: a batch of them is usually
# independent (no datom, no entity's cardinality-one attribute, in two transactions), the
# case normalised all at once (workers.db.bulk); sometimes not, the per-transaction case.
nodes, people = st.integers(1, 10), st.integers(1, 30)
plain_ops = st.tuples(st.sampled_from([ADD, ADD, RETRACT]), st.one_of(
    st.tuples(nodes, st.just(TO), nodes),
    st.tuples(people, st.just(AGE), st.sampled_from([1, 2, 30])),
    st.tuples(people, st.just(NAME), st.sampled_from(["Ivan", "Petr", 7])),
)).map(lambda op: [op[0], *op[1]])
plain_tx_streams = st.lists(st.lists(plain_ops, min_size=1, max_size=6), min_size=1,
                            max_size=12)
SCHEMA_DATOMS = {d for a in CARDINALITY_ONE
                 for d in [(a, keyword("db/ident"), a),
                           (a, keyword("db/cardinality"), keyword("db.cardinality/one"))]}


def reference_db() -> ReferenceDb:
    """The oracle's database after ``SCHEMA_TX``."""
    reference = ReferenceDb(CARDINALITY_ONE)
    reference.datoms |= SCHEMA_DATOMS
    return reference

# Churn over three entities: most batches touch a datom, an entity's cardinality-one
# attribute or an entity more than once, and retract entities in transactions that add to
# them — the dependent batches normalised at once (workers.db.bulk) — with refusals among
# them (a datom added and retracted, two ages, a score of the wrong type).
SCORE = keyword("score")
SCORE_TX = [{keyword("db/ident"): SCORE, keyword("db/valueType"): keyword("db.type/long")}]
few = st.sampled_from([1, 2, 3])
churn_datoms = st.one_of(
    st.tuples(few, st.just(TO), few),
    st.tuples(few, st.just(AGE), st.sampled_from([1, 2, 30])),
    st.tuples(few, st.just(SCORE), st.sampled_from([1, 2, "x"])),
)
churn_ops = st.one_of(
    st.tuples(st.sampled_from([ADD, ADD, RETRACT]), churn_datoms).map(lambda op: [op[0], *op[1]]),
    few.map(lambda e: [RETRACT_ENTITY, e]),
)
churn_streams = st.lists(st.lists(churn_ops, min_size=1, max_size=4), min_size=1, max_size=16)

# Values Python finds equal though they are six values (1, 1.0, true; 0, 0.0, false), on an
# untyped cardinality-many attribute and as edge targets, so rows, groups and joins meet all
# of them.  A transaction never names two such datoms (``[1 :v 1]`` and ``[1 :v true]``):
# normalisation compares one transaction's ops as Python does (docs/semantics.md).
V, W = keyword("v"), keyword("w")
MIXED_VALUES = [1, 1.0, True, 0, 0.0, False]
mixed = st.sampled_from(MIXED_VALUES)
mixed_datoms = st.one_of(
    st.tuples(few, st.just(V), mixed),
    st.tuples(few, st.just(W), mixed),
    st.tuples(few, st.just(TO), few),
)


def _kind_apart(tx: list[Any]) -> bool:
    """Whether no two ops of ``tx`` name datoms Python finds equal but of different kinds."""
    named = [tuple(op[1:]) for op in tx if len(op) == 4]
    return all(a != b or all(type(x) is type(y) for x, y in zip(a, b, strict=True))
               for i, a in enumerate(named) for b in named[i + 1:])


mixed_ops = st.one_of(
    st.tuples(st.sampled_from([ADD, ADD, RETRACT]), mixed_datoms).map(lambda op: [op[0], *op[1]]),
    few.map(lambda e: [RETRACT_ENTITY, e]),
)
mixed_streams = st.lists(st.lists(mixed_ops, min_size=1, max_size=4).filter(_kind_apart),
                         min_size=1, max_size=14)
