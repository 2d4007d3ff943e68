"""Snapshots on disk (``SnapshotStore``) and ``Engine.state()`` / ``Engine.restore()``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from workers.arrangements.values import ValueIds
from workers.db import BUILTIN_SCHEMA
from workers.edn import keyword
from workers.engine import Engine, EngineState
from workers.runtime import checkpoint
from workers.runtime.checkpoint import SnapshotStore

OLD_SNAPSHOT = Path(__file__).parents[2] / "data" / "snapshots" / "dict-tries-b83f9eb.pickle"
SCHEMA = "[{:db/ident :name :db/valueType :db.type/string :db/cardinality :db.cardinality/one}]"
DATA = """[{:db/id 1 :name "Ivan" :g/to [2 3]} {:db/id 2 :name "Petr" :g/to 3}
           {:db/id 3 :name "Oleg" :g/to 1}]"""
LATER = '[[:db/add 1 :name "Ivanov"] [:db/add 3 :g/to 2] [:db/retract 1 :g/to 3]]'
TRIANGLE = "[:find ?a ?b ?c :where [?a :g/to ?b] [?b :g/to ?c] [?a :g/to ?c]]"
NAMES = "[:find ?e ?n :where [?e :name ?n]]"


def _engine() -> Engine:
    engine = Engine()
    engine.transact(SCHEMA, tx_id=10)
    engine.transact(DATA, tx_id=11)
    return engine


def _empty_state(tx: int) -> EngineState:
    empty = np.zeros(0, np.int32)
    return EngineState(ValueIds(), (empty, empty, empty), BUILTIN_SCHEMA, tx)


def _restored(directory: Path) -> Engine:
    SnapshotStore(directory).save(_engine().state())
    state = SnapshotStore(directory).latest(at_most=11)
    assert state is not None
    engine = Engine()
    engine.restore(state)
    return engine


def test_save_then_latest_returns_an_equal_state(tmp_path: Path) -> None:
    state = _engine().state()
    path = SnapshotStore(tmp_path).save(state)
    assert path.name == "snapshot-00000000000000000011.pickle"
    loaded = SnapshotStore(tmp_path).latest(at_most=11)
    assert loaded is not None
    assert loaded.tx == state.tx
    assert all(np.array_equal(mine, theirs)
               for mine, theirs in zip(loaded.columns, state.columns, strict=True))
    assert [loaded.values.value(i) for i in range(loaded.values.size)] == [
        state.values.value(i) for i in range(state.values.size)]
    assert loaded.schema[keyword("name")] == state.schema[keyword("name")]
    assert loaded.schema[keyword("name")].cardinality_one


@pytest.mark.parametrize(("at_most", "expected"), [(4, None), (5, 5), (8, 5), (9, 9), (99, 9)])
def test_latest_is_newest_at_or_below(tmp_path: Path, at_most: int, expected: int | None) -> None:
    store = SnapshotStore(tmp_path)
    for tx in (9, 5):
        store.save(_empty_state(tx))
    found = store.latest(at_most)
    assert (found and found.tx) == expected


def test_a_snapshot_this_version_cannot_read_is_skipped_for_an_older_one(
        tmp_path: Path) -> None:
    """An upgrade meets snapshots of the previous database form (or a damaged file): the
    worker starts from an older readable one, or from the log, instead of failing."""
    store = SnapshotStore(tmp_path)
    store.save(_empty_state(5))
    (tmp_path / "snapshot-00000000000000000007.pickle").write_bytes(b"not a pickle")
    not_a_state = checkpoint.pickle.dumps({"tries": {}, "tx": 8})
    (tmp_path / "snapshot-00000000000000000008.pickle").write_bytes(not_a_state)
    # written by the version whose database was dict tries: it unpickles into EngineState,
    # its fields in the wrong slots
    (tmp_path / "snapshot-00000000000000000009.pickle").write_bytes(OLD_SNAPSHOT.read_bytes())
    found = store.latest(at_most=10)
    assert found is not None and found.tx == 5


def test_missing_directory_has_no_snapshot(tmp_path: Path) -> None:
    assert SnapshotStore(tmp_path / "absent").latest(at_most=10**9) is None


def test_only_newest_two_are_kept_and_no_temporary_files(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "snapshots")
    for tx in (1, 2, 30, 4):
        store.save(_empty_state(tx))
    assert sorted(p.name for p in (tmp_path / "snapshots").iterdir()) == [
        "snapshot-00000000000000000004.pickle", "snapshot-00000000000000000030.pickle"]
    assert not list(tmp_path.rglob("*.tmp"))


def test_failed_save_leaves_no_temporary_file(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    def disk_full(*_: object, **__: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(checkpoint.pickle, "dump", disk_full)
    with pytest.raises(OSError, match="No space left"):
        SnapshotStore(tmp_path).save(_empty_state(1))
    assert not list(tmp_path.iterdir())


def test_restored_engine_has_same_datoms_schema_and_tx(tmp_path: Path) -> None:
    original, restored = _engine(), _restored(tmp_path)
    assert set(restored.db.datoms()) == set(original.db.datoms())
    # The datom count (a metric) is kept by every write and recounted on restore.
    assert len(restored.db) == len(original.db) == len(set(original.db.datoms())) > 0
    assert restored.tx == 11
    for engine in (original, restored):  # :name is still cardinality-one
        engine.transact('[[:db/add 1 :name "Ivanov"]]')
    assert restored.query(NAMES) == original.query(NAMES)
    assert (1, "Ivan") not in restored.query(NAMES)


def test_queries_registered_after_restore_match_the_original(tmp_path: Path) -> None:
    original, restored = _engine(), _restored(tmp_path)
    for name, query in (("tri", TRIANGLE), ("names", NAMES)):
        assert restored.register(name, query) == original.register(name, query)
    assert restored.result("tri") == {(1, 2, 3): 1}
    assert restored.transact(LATER) == original.transact(LATER)


def test_queries_registered_before_restore_see_restored_data(tmp_path: Path) -> None:
    original, restored = _engine(), Engine()
    original.register("tri", TRIANGLE)
    assert restored.register("tri", TRIANGLE) == {}
    SnapshotStore(tmp_path).save(original.state())
    state = SnapshotStore(tmp_path).latest(at_most=11)
    assert state is not None
    restored.restore(state)
    assert restored.result("tri") == original.result("tri") == {(1, 2, 3): 1}
    changes = restored.transact(LATER)
    assert changes == original.transact(LATER)
    assert changes["tri"] == {(1, 2, 3): -1, (3, 1, 2): 1}


def test_restore_from_own_state_keeps_the_data() -> None:
    engine = _engine()
    before = set(engine.db.datoms())
    engine.restore(engine.state())
    assert set(engine.db.datoms()) == before


def test_in_memory_restore_does_not_alias_the_source() -> None:
    source, copy = _engine(), Engine()
    before = set(source.db.datoms())
    copy.restore(source.state())
    copy.transact('[[:db/add 1 :g/to 1]]')
    assert set(source.db.datoms()) == before
