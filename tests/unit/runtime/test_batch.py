"""BatchApplier: a batch of the log as one engine tick, its refusals kept in offset order for
the dead letters, a big tick in pieces (a real local engine; records from a FakeKafka)."""

from __future__ import annotations

from dataclasses import replace

from workers.config import WorkerConfig
from workers.runtime.batch import BatchApplier
from workers.runtime.dead_letters import DeadLetters
from workers.runtime.engine_role import EngineRole
from workers.runtime.phases import TickPhases
from workers.runtime.tick_writer import TickOutput
from workers.testing import FakeKafka, FakeTxSource
from workers.zset.row import Row


def _applier(config: WorkerConfig, kafka: FakeKafka) -> tuple[BatchApplier, EngineRole,
                                                              DeadLetters]:
    role = EngineRole(config)
    role.engine.register("names", "[:find ?n :where [?e :name ?n]]")
    dead_letters = DeadLetters(config, kafka.topics.tx, lambda at: FakeTxSource(kafka, at))
    return BatchApplier(config, role, dead_letters, TickPhases(None)), role, dead_letters


def test_refused_and_undecodable_records_are_kept_in_offset_order() -> None:
    kafka = FakeKafka()
    kafka.send('[[:db/add 1 :name "Ivan"]]')
    kafka.send('[[:db/cas 1 :name "Oleg" "Ana"]]')  # Ivan, not Oleg: refused
    kafka.send_raw(b"not avro")
    applier, role, dead_letters = _applier(WorkerConfig(), kafka)
    output = TickOutput()
    rest = applier.apply(kafka.tx, output)
    assert list(rest) == [] and output.changes == {"names": {Row(("Ivan",)): 1}}
    assert role.engine.tx == 2  # the batch's last offset, decodable or not
    assert [offset for offset, _, _ in dead_letters.refusals()] == [1, 2]


def test_a_tick_larger_than_tick_max_datoms_comes_in_pieces() -> None:
    kafka = FakeKafka()
    kafka.send('[[:db/add 1 :name "Ivan"] [:db/add 2 :name "Oleg"] [:db/add 3 :name "Ana"]]')
    applier, _, _ = _applier(replace(WorkerConfig(), tick_max_datoms=1), kafka)
    output = TickOutput()
    rest = applier.apply(kafka.tx, output)
    pieces = [output.changes["names"], *(piece["names"] for piece in rest)]
    assert len(pieces) == 3 and sum(map(len, pieces)) == 3
    assert rest.queries == {"names"}
