"""workers.db.tx: the transaction grammar (ops, entity maps, ids) from EDN text and Python forms."""

import re
import uuid

import edn_format
import pytest

from tests.unit.db.txdb import TxDb, case, kw, row
from workers import edn
from workers.db import parse_tx
from workers.db.resolve import allocated_id
from workers.db.tx import parse_batch
from workers.edn import Keyword
from workers.errors import ErrorCode, TransactionError

NAME, AGE, TAG, LIKES = kw("name"), kw("age"), kw("tag"), kw("likes")
IDENT, CARDINALITY, VALUE_TYPE = kw("db/ident"), kw("db/cardinality"), kw("db/valueType")
UUID_TEXT = "f81d4fae-7dec-11d0-a765-00a0c91e6bf6"
IVAN = '[{:db/id 1 :name "Ivan" :tag [:a :b]} {:db/id 2 :name "Petr" :likes 1}]'


@pytest.mark.parametrize(("before", "tx", "delta"), [
    case([], "[]", {}),
    case([], '[[:db/add 1 :name "Ivan"]]', {(1, NAME, "Ivan"): 1}),
    case([], '[{:db/id 1 :name "Ivan" :age 30}]', {(1, NAME, "Ivan"): 1, (1, AGE, 30): 1}),
    case([], "[{:db/id 1 :tag [:a :b]}]", {(1, TAG, kw("a")): 1, (1, TAG, kw("b")): 1}),
    case([], "[{:db/id 1 :tag #{:a :b}}]", {(1, TAG, kw("a")): 1, (1, TAG, kw("b")): 1}),
    case([], "[{:db/id 1}]", {}),
    case([], '[[:db/add :ivan :name "Ivan"]]', {(kw("ivan"), NAME, "Ivan"): 1}),
    case([], '[{:db/id :ivan :likes :pizza}]', {(kw("ivan"), LIKES, kw("pizza")): 1}),
    case([], '[[:db/add "tmp-1" :name "Ivan"]]', {(allocated_id(1, 0), NAME, "Ivan"): 1}),
    case([], '[[:db/add -1 :name "Ivan"] [:db/add -1 :age 3]]',
         {(allocated_id(1, 0), NAME, "Ivan"): 1, (allocated_id(1, 0), AGE, 3): 1}),
    case([], '[{:name "Ivan"} {:name "Oleg"}]',
         {(allocated_id(1, 0), NAME, "Ivan"): 1, (allocated_id(1, 1), NAME, "Oleg"): 1}),
    case([IVAN], '[{:db/id "x" :name "Ivan"}]', {(allocated_id(2, 0), NAME, "Ivan"): 1}),
    case([], f'[[:db/add #uuid "{UUID_TEXT}" :name "Ivan"]]',
         {(uuid.UUID(UUID_TEXT), NAME, "Ivan"): 1}),
    case([], "[{:db/ident :name :db/cardinality :db.cardinality/one}]",
         {(NAME, IDENT, NAME): 1, (NAME, CARDINALITY, kw("db.cardinality/one")): 1}),
    case([], "[{:db/ident :age :db/valueType :db.type/long}]",
         {(AGE, IDENT, AGE): 1, (AGE, VALUE_TYPE, kw("db.type/long")): 1}),
    case([IVAN], '[[:db/retract 1 :name "Ivan"]]', {(1, NAME, "Ivan"): -1}),
    case([IVAN], "[[:db/retract 1 :tag]]", {(1, TAG, kw("a")): -1, (1, TAG, kw("b")): -1}),
    case([IVAN], "[[:db/retractEntity 1]]",
         {(1, NAME, "Ivan"): -1, (1, TAG, kw("a")): -1, (1, TAG, kw("b")): -1}),
])
def test_transaction_gives_its_effective_delta(before, tx, delta):
    assert TxDb(*before).transact(tx) == delta


@pytest.mark.parametrize(("tx", "message"), [
    row('{:db/id 1 :name "Ivan"}', 'a transaction is a vector of ops, got {:db/id 1 :name "Ivan"}'),
    row('"tx"', 'a transaction is a vector of ops, got "tx"'),
    row("42", "a transaction is a vector of ops, got 42"),
    row("nil", "a transaction is a vector of ops, got nil"),
    row("[[:db/foo 1]]", "malformed op [:db/foo 1]"),
    row("[[:db/add 1 :name]]", "malformed op [:db/add 1 :name]"),
    row('[[:db/add 1 :name "Ivan" 2]]', 'malformed op [:db/add 1 :name "Ivan" 2]'),
    row("[[:db/retract 1]]", "malformed op [:db/retract 1]"),
    row("[[:db/retractEntity 1 2]]", "malformed op [:db/retractEntity 1 2]"),
    row("[[:db/retractEntity]]", "malformed op [:db/retractEntity]"),
    row("[[]]", "not a transaction op: []"),
    row("[1]", "not a transaction op: 1"),
    row('["op"]', 'not a transaction op: "op"'),
])
def test_malformed_transaction_is_refused_with_tx_shape(db, tx, message):
    with pytest.raises(TransactionError, match=re.escape(message)) as info:
        db.transact(tx)
    assert info.value.code is ErrorCode.TX_SHAPE


@pytest.mark.parametrize(("tx", "message"), [
    row('[[:db/add 1.5 :name "Ivan"]]', "entity id must be a long, keyword or uuid, a tempid "
        "(a negative long or a string) or a lookup ref [attribute value], "
        'got double 1.5 in [:db/add 1.5 :name "Ivan"]'),
    row('[[:db/add true :name "Ivan"]]', "got boolean true"),
    row('[{:db/id 1.5 :name "Ivan"}]', 'got double 1.5 in {:db/id 1.5 :name "Ivan"}'),
    row("[[:db/retractEntity 1.5]]", "got double 1.5 in [:db/retractEntity 1.5]"),
    row('[[:db/add 1 "name" "Ivan"]]', 'attribute must be a keyword, got string "name"'),
    row('[[:db/add 1 name "Ivan"]]', "attribute must be a keyword, got Symbol name"),
    row('[{:db/id 1 "name" "Ivan"}]', 'attribute must be a keyword, got string "name"'),
    row("[[:db/retract 1 2]]", "attribute must be a keyword, got long 2"),
    row("[[:db/add 1 :name nil]]", "unsupported value nil (NoneType) in [:db/add 1 :name nil]"),
    row("[{:db/id 1 :name nil}]", "unsupported value nil (NoneType) in {:db/id 1 :name nil}"),
    row("[{:db/id 1 :tag [:a nil]}]", "unsupported value nil"),
    row('[{:db/id 1 :name {:first "Ivan"}}]', "a nested map is the value of :name, which is "
        "not a :db.type/ref attribute"),
    row("[[:db/add 1 :tag [:a :b]]]", "unsupported value [:a :b] (a vector) of :tag"),
    row("[[:db/add 1 :tag [1 2]]]", "unsupported value [1 2] (list)"),
])
def test_ill_typed_id_attribute_or_value_is_refused_with_tx_type(db, tx, message):
    with pytest.raises(TransactionError, match=re.escape(message)) as info:
        db.transact(tx)
    assert info.value.code is ErrorCode.TX_TYPE


# -- the fast path: Python forms built by the caller, keywords not interned ----------------

P = edn_format.Keyword


@pytest.mark.parametrize(("text", "forms"), [
    pytest.param("[[:db/add :ivan :likes :pizza]]",
                 [[P("db/add"), P("ivan"), P("likes"), P("pizza")]], id="[:db/add ...]"),
    pytest.param('[{:db/id 2 :name "Petr" :tag [:a :b]}]',
                 [{P("db/id"): 2, P("name"): "Petr", P("tag"): [P("a"), P("b")]}],
                 id="{:db/id ...}"),
    pytest.param("[{:db/ident :age :db/cardinality :db.cardinality/one}]",
                 [{P("db/ident"): P("age"), P("db/cardinality"): P("db.cardinality/one")}],
                 id="{:db/ident ...}"),
    pytest.param('[[:db/retract 1 :tag] [:db/retractEntity 2] [:db/retract 1 :name "Ivan"]]',
                 ((P("db/retract"), 1, P("tag")), (P("db/retractEntity"), 2),
                  (P("db/retract"), 1, P("name"), "Ivan")), id="retractions"),
])
def test_python_forms_with_plain_keywords_give_the_same_delta_as_edn_text(text, forms):
    assert TxDb(IVAN).transact(forms) == TxDb(IVAN).transact(text)


@pytest.mark.parametrize("text", ["[[:db/add :ivan :likes :pizza]]", IVAN,
                                  "[[:db/retract 1 :tag] [:db/retractEntity 2]]"])
def test_forms_read_by_edn_format_give_the_same_delta_as_edn_text(text):
    assert TxDb(IVAN).transact(edn_format.loads(text)) == TxDb(IVAN).transact(text)


def test_delta_from_plain_keywords_holds_interned_keywords(db):
    delta = db.transact([[P("db/add"), P("ivan"), P("likes"), P("pizza")]])
    assert all(type(x) is Keyword for datom in delta for x in datom)


def test_a_batch_parses_each_transaction_as_alone_and_keeps_none_of_a_refused_one() -> None:
    batch = [edn.read(tx) for tx in [
        '[[:db/add 1 :name "Ivan"] [:db/retract 2 :age 3] [:db/retractEntity 4]]',
        '[[:db/add 5 :name "x"] [:db/retract 5 :age] [:db/add 6]]',  # refused: a malformed op
        '[{:db/id 7 :tag [:a :b]} [:db/retract 7 :age]]', "[]"]]
    parsed = parse_batch(batch)
    with pytest.raises(TransactionError) as alone:
        parse_tx(batch[1])
    assert [(position, str(error)) for position, error in parsed.refused] == [
        (1, str(alone.value))]
    assert len(parsed) == 4
    for position in (0, 2, 3):
        assert parsed.transaction(position) == parse_tx(batch[position])
    assert parsed.transaction(1) == parse_tx([])
