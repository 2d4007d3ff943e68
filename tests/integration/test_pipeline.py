"""The worker against the real broker: transactions in, committed per-query changes out."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from tests.integration.pipeline import (
    ADD,
    REACH_COUNT,
    TO,
    TRIANGLE,
    TWO_PATH,
    committed_changes,
    isolated_config,
    random_stream,
    reference_states,
    send_stream,
    wait_committed,
)
from tests.property.pull_oracle import pulled_from_scratch
from workers.edn import keyword
from workers.errors import QueryError
from workers.kafka.avro import AvroCodec
from workers.kafka.clients import QueryAdmin, TxProducer, follow
from workers.kafka.messages import transaction_to_avro
from workers.kafka.topics import Topics
from workers.runtime.process import WorkerProcess
from workers.testing import check_change_stream
from workers.zset import add_into

PULL_FRIENDS = "[:find ?a (pull ?a [:db/id {:g/to [:db/id]} :g/_to]) :where [?a :g/to ?b]]"
TAIL_WAIT_S = 60.0  # longest the tail waits for the worker's change

pytestmark = pytest.mark.kafka


@pytest.fixture
def worker_factory(kafka_bootstrap: str, tmp_path: Path):
    workers: list[WorkerProcess] = []

    def start(**flags: object) -> tuple[WorkerProcess, object]:
        config = isolated_config(kafka_bootstrap)
        worker = WorkerProcess(config, tmp_path / "snapshots", tmp_path / "worker.log", **flags)
        worker.start()
        workers.append(worker)
        return worker, config

    yield start
    for worker in workers:
        worker.stop()


def test_two_queries_share_the_log_and_match_the_oracle_at_every_tick(worker_factory) -> None:
    worker, config = worker_factory(tick_max_tx=3)
    admin = QueryAdmin(config)
    admin.add("tri", TRIANGLE)
    admin.add("paths", TWO_PATH)
    wait_committed(config, ["tri", "paths"], -1, worker)  # > 10 ticks: at most 3 tx a tick
    stream = random_stream(seed=7, count=150)
    producer = TxProducer(config)
    for tx in stream:
        producer.send(tx)
    producer.flush()
    wait_committed(config, ["tri", "paths"], len(stream) - 1, worker)
    states = reference_states(stream)
    assert check_change_stream(TRIANGLE, committed_changes(config, "tri"), states) > 10
    assert check_change_stream(TWO_PATH, committed_changes(config, "paths"), states) > 10


def test_recursive_rule_with_aggregates_is_kept_through_the_worker(worker_factory) -> None:
    worker, config = worker_factory(tick_max_tx=2)
    QueryAdmin(config).add("reach", REACH_COUNT)
    wait_committed(config, ["reach"], -1, worker)  # > 10 ticks: at most 2 tx a tick
    stream = random_stream(seed=11, count=60)
    producer = TxProducer(config)
    for tx in stream:
        producer.send(tx)
    producer.flush()
    wait_committed(config, ["reach"], len(stream) - 1, worker)
    changes = committed_changes(config, "reach")
    rows = [c.row for c in changes if c.row]  # not the registration's empty snapshot, ()
    assert any(isinstance(row[2], frozenset) for row in rows)
    assert any(isinstance(row[3], tuple) and len(row[3]) == 2 for row in rows)
    assert check_change_stream(REACH_COUNT, changes, reference_states(stream)) > 10


def test_pulled_maps_travel_as_edn_and_integrate_to_the_oracle(worker_factory) -> None:
    worker, config = worker_factory(tick_max_tx=2)
    QueryAdmin(config).add("pulled", PULL_FRIENDS)
    wait_committed(config, ["pulled"], -1, worker)
    stream = random_stream(seed=5, count=40)
    send_stream(config, stream)
    wait_committed(config, ["pulled"], len(stream) - 1, worker)
    view: dict[Any, int] = {}
    for change in committed_changes(config, "pulled"):
        add_into(view, {change.row: change.weight})
    assert view == pulled_from_scratch(PULL_FRIENDS, reference_states(stream)[-1], ())
    assert any(isinstance(row[1], Mapping) for row in view)


def test_query_added_on_a_populated_db_starts_with_its_snapshot(worker_factory) -> None:
    worker, config = worker_factory()
    admin = QueryAdmin(config)
    admin.add("probe", TRIANGLE)  # its progress tells when the worker has taken the stream
    producer = TxProducer(config)
    stream = random_stream(seed=3, count=40)
    for tx in stream:
        producer.send(tx)
    producer.flush()
    wait_committed(config, ["probe"], len(stream) - 1, worker)
    admin.add("paths", TWO_PATH)
    wait_committed(config, ["paths"], len(stream) - 1, worker)
    changes = committed_changes(config, "paths")
    assert changes and all(c.snapshot for c in changes[:1])
    check_change_stream(TWO_PATH, changes, reference_states(stream))


def test_refused_query_is_reported_and_the_worker_keeps_going(worker_factory) -> None:
    worker, config = worker_factory()
    admin = QueryAdmin(config)
    with pytest.raises(QueryError, match=r"unsafe query: :find \?x"):
        admin.add("bad", "{:find [?x] :where [[?a :g/to ?b]]}")
    # A registration that skipped the CLI's check reaches the worker anyway.
    codec = AvroCodec("query_registration")
    raw = Producer(config.kafka())
    raw.produce(Topics(config.topic_prefix).queries,
                codec.encode({"name": "sneaky", "inputs": [],
                              "edn": "{:find [(pull $2 ?x [:a])] :where [[?x :a]]}"}),
                b"sneaky")
    raw.flush(10)
    admin.add("tri", TRIANGLE)
    producer = TxProducer(config)
    producer.send("[[:db/add 1 :g/to 2] [:db/add 1 :g/to 3] [:db/add 2 :g/to 3]]")
    producer.flush()
    wait_committed(config, ["tri"], 0, worker)
    dead = _dead_letters(config)
    assert [(d["topic"], d["code"]) for d in dead] == [(Topics(config.topic_prefix).queries,
                                                         "query-unsupported")]
    assert ("query sneaky: :find element 1: pull from a source other than $ is not supported"
            in dead[0]["reason"])
    assert [(c.row, c.weight) for c in committed_changes(config, "tri")
            if not c.snapshot] == [((1, 2, 3), 1)]
    worker.stop()  # a restart meets the refused registration again, and does not repeat it
    worker.start()
    producer.send("[[:db/add 7 :g/to 8]]")
    producer.flush()
    wait_committed(config, ["tri"], 1, worker)
    assert len(_dead_letters(config)) == 1


def test_bad_input_goes_to_the_dlq_and_the_stream_around_it_is_kept(worker_factory) -> None:
    worker, config = worker_factory(tick_max_tx=1)
    admin = QueryAdmin(config)
    admin.add("tri", TRIANGLE)
    codec = AvroCodec("transaction")
    producer = TxProducer(config)
    wrong_fingerprint = b"\xc3\x01" + bytes(8) + codec.encode({"ops": [], "source": None})[10:]
    nil_value = codec.encode({"ops": [{"op": "ADD", "e": 1, "a": "g/to", "v": None}],
                              "source": None})
    malformed = codec.encode({"ops": [{"op": "RETRACT_ENTITY", "e": 1, "a": "g/to", "v": None}],
                              "source": None})
    good = [[[ADD, 1, TO, 2]], [[ADD, 1, TO, 3]], [[ADD, 2, TO, 3]]]
    producer.send('[{:db/ident :age :db/valueType :db.type/long}]')       # 0
    producer.send(good[0])                                                # 1
    producer.send_raw(b"\x00\x01not avro")                               # 2 Confluent, no registry
    producer.send_raw(b"garbage")                                        # 3 undecodable
    producer.send_raw(wrong_fingerprint)                                 # 4 unknown schema
    producer.send(good[1])                                               # 5
    producer.send_raw(nil_value)                                         # 6 nil value
    producer.send_raw(malformed)                                         # 7 malformed op
    producer.send('[[:db/add 1 :age "thirty"]]')                         # 8 type error
    producer.send_raw(codec.encode(transaction_to_avro(                  # 9 conflict
        [[ADD, 5, TO, 6], [keyword("db/retract"), 5, TO, 6]])))
    producer.send(good[2])                                               # 10
    producer.flush()
    wait_committed(config, ["tri"], 10, worker)
    dead = {d["offset"]: (d["code"], d["topic"], d["payload"][:2]) for d in _dead_letters(config)}
    tx_topic = Topics(config.topic_prefix).tx
    assert {offset: code for offset, (code, _, _) in dead.items()} == {
        2: "unknown-schema", 3: "undecodable", 4: "unknown-schema", 6: "tx-type", 7: "tx-shape",
        8: "tx-type", 9: "tx-conflict"}
    assert {topic for _, topic, _ in dead.values()} == {tx_topic}
    assert dead[3][2] == b"ga"  # the original bytes travel with the reason
    changes = committed_changes(config, "tri")
    assert changes[0].snapshot and changes[0].weight == 0  # the registration's: empty then
    assert [(c.row, c.weight, c.tx_first) for c in changes[1:]] == [((1, 2, 3), 1, 10)]


def _dead_letters(config) -> list[dict]:
    codec = AvroCodec("dead_letter")
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(config.kafka(**{"group.id": "dlq-check", "isolation.level":
                                        "read_committed", "enable.partition.eof": True}))
    consumer.assign([TopicPartition(Topics(config.topic_prefix).dlq, 0, 0)])
    records, deadline = [], time.monotonic() + 30
    while time.monotonic() < deadline:
        message = consumer.poll(1)
        if message is None:
            continue
        if message.error():
            break
        records.append(codec.decode(message.value()))
    consumer.close()
    return records


def test_tail_follows_a_live_query_even_before_it_exists(worker_factory) -> None:
    """``deltalog tail`` started before the query's results topic exists waits for it (a
    consumer assigned to a missing topic may not notice its creation for minutes)."""
    worker, config = worker_factory()
    ended: list[Any] = []  # to its end, a query that does not exist yet: nothing, at once
    probe = threading.Thread(target=lambda: ended.append(
        list(follow(config, "tri", stop_at_end=True))), daemon=True)
    probe.start()
    probe.join(TAIL_WAIT_S)
    assert ended == [[]]
    found: list[Any] = []  # the first row, a change or (read after it) in the snapshot
    tail = threading.Thread(target=lambda: found.append(
        next(c for c in follow(config, "tri") if c.weight)), daemon=True)
    tail.start()
    time.sleep(1.0)  # following a query nobody registered yet
    QueryAdmin(config).add("tri", TRIANGLE)
    wait_committed(config, ["tri"], -1, worker)  # taken up first: the triangle is a change,
    producer = TxProducer(config)  # not part of a snapshot, however slow the worker starts
    producer.send("[[:db/add 1 :g/to 2] [:db/add 1 :g/to 3] [:db/add 2 :g/to 3]]")
    producer.flush()
    tail.join(TAIL_WAIT_S)
    assert [(change.row, change.weight) for change in found] == [((1, 2, 3), 1)]


def test_the_tx_log_is_kept_forever(kafka_bootstrap: str) -> None:
    from confluent_kafka.admin import AdminClient, ConfigResource

    config = isolated_config(kafka_bootstrap)
    TxProducer(config)  # creates the topics
    admin = AdminClient(config.kafka())
    resource = ConfigResource("topic", Topics(config.topic_prefix).tx)
    configs = admin.describe_configs([resource])[resource].result(30)
    assert configs["retention.ms"].value == "-1"
    assert configs["retention.bytes"].value == "-1"
