"""The snapshot store (``SnapshotStore``, ``Snapshots``) and ``Engine.state()`` /
``Engine.restore()`` through it."""

from __future__ import annotations

import logging
import tempfile
import threading
from pathlib import Path

import numpy as np
import pyarrow.fs as pafs
import pytest

from workers.arrangements.values import ValueIds
from workers.db import BUILTIN_SCHEMA
from workers.edn import keyword
from workers.engine import Engine, EngineState
from workers.errors import ErrorCode, WorkersError
from workers.runtime import checkpoint, snapshot_format
from workers.runtime.checkpoint import KEEP, SnapshotStore

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


def _name(tx: int, suffix: str = ".zip") -> str:
    return f"snapshot-{tx:020d}{suffix}"


def _restored(directory: Path) -> Engine:
    SnapshotStore.at(directory).save(_engine().state())
    state = SnapshotStore.at(directory).latest(at_most=11)
    assert state is not None
    engine = Engine()
    engine.restore(state)
    return engine


def test_save_then_latest_returns_an_equal_state(tmp_path: Path) -> None:
    state = _engine().state()
    path = SnapshotStore.at(tmp_path).save(state)
    assert Path(path) == tmp_path / _name(11)
    loaded = SnapshotStore.at(tmp_path).latest(at_most=11)
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
    store = SnapshotStore.at(tmp_path)
    for tx in (9, 5):
        store.save(_empty_state(tx))
    found = store.latest(at_most)
    assert (found and found.tx) == expected


def test_a_snapshot_this_version_cannot_read_is_skipped_for_an_older_one(
        tmp_path: Path, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A damaged file, one cut short (whatever wrote it), another format's: the worker
    starts from an older readable one, or from the log."""
    store = SnapshotStore.at(tmp_path)
    store.save(_empty_state(5))
    whole = (tmp_path / _name(11)).read_bytes() if store.save(_engine().state()) else b""
    (tmp_path / _name(11)).unlink()
    with monkeypatch.context() as later_version:
        later_version.setattr(snapshot_format, "VERSION", 9)
        store.save(_empty_state(9))
    (tmp_path / _name(6)).write_bytes(b"not a snapshot")
    (tmp_path / _name(7)).write_bytes(whole[:len(whole) // 2])
    damaged = bytearray(whole)
    damaged[len(whole) // 2] ^= 0xFF
    (tmp_path / _name(8)).write_bytes(bytes(damaged))
    with caplog.at_level(logging.WARNING, "deltalog.checkpoint"):
        found = store.latest(at_most=10)
    assert found is not None and found.tx == 5
    assert "version 9" in caplog.text


def test_an_older_deltalogs_pickle_is_never_loaded(tmp_path: Path,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    """After an upgrade only the previous version's pickles are there: the worker replays
    the log and says why (a pickle runs code when loaded, and the store may be shared)."""
    (tmp_path / _name(10, ".pickle")).write_bytes(OLD_SNAPSHOT.read_bytes())
    with caplog.at_level(logging.WARNING, "deltalog.checkpoint"):
        assert SnapshotStore.at(tmp_path).latest(at_most=10) is None
    assert f"{_name(10, '.pickle')} not read: a pickle" in caplog.text


def test_a_torn_write_is_never_read(tmp_path: Path) -> None:
    """A writer that died mid-write leaves a temporary file, never a name a reader picks;
    pruning later deletes it."""
    store = SnapshotStore.at(tmp_path)
    store.save(_empty_state(5))
    torn = tmp_path / "snapshot-00000000000000000009.0123abcd.tmp"
    store.save(_empty_state(6))
    torn.write_bytes((tmp_path / _name(6)).read_bytes()[:100])
    assert store.newest() == 6
    assert (store.latest(at_most=99) or _empty_state(-1)).tx == 6
    for tx in (10, 11, 12):
        store.save(_empty_state(tx))
    assert not torn.exists()


def test_missing_directory_has_no_snapshot(tmp_path: Path) -> None:
    assert SnapshotStore.at(tmp_path / "absent").latest(at_most=10**9) is None
    assert SnapshotStore.at(tmp_path / "absent").newest() is None


def test_only_the_newest_are_kept_and_no_temporary_files(tmp_path: Path) -> None:
    store = SnapshotStore.at(tmp_path / "snapshots")
    for tx in (1, 2, 30, 4, 7):
        store.save(_empty_state(tx))
    assert KEEP == 3
    assert sorted(p.name for p in (tmp_path / "snapshots").iterdir()) == [
        _name(4), _name(7), _name(30)]


def test_failed_save_leaves_no_temporary_file(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    def disk_full(*_: object, **__: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(snapshot_format, "write", disk_full)
    with pytest.raises(OSError, match="No space left"):
        SnapshotStore.at(tmp_path).save(_empty_state(1))
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("form", ["plain", "relative", "file-url"])
def test_a_path_and_a_file_url_name_the_same_store(tmp_path: Path, form: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    location = {"plain": str(tmp_path / "shared"), "relative": "shared",
                "file-url": (tmp_path / "shared").as_uri()}[form]
    SnapshotStore.at(location).save(_empty_state(3))
    assert [p.name for p in (tmp_path / "shared").iterdir()] == [_name(3)]
    assert (SnapshotStore.at(tmp_path / "shared").latest(at_most=3) or _empty_state(-1)).tx == 3


def test_a_url_no_filesystem_opens_is_a_config_error_without_its_secret() -> None:
    with pytest.raises(WorkersError, match=r"snapshot store nosuch://u:\*\*\*@b/s") as error:
        SnapshotStore.at("nosuch://u:secret@b/s")
    assert error.value.code == ErrorCode.CONFIG and "secret" not in str(error.value)


def test_an_in_memory_store_by_url() -> None:
    """``mock://`` is pyarrow's in-memory filesystem: the same code as a bucket's, no disk."""
    store = SnapshotStore.at("mock:///fleet/snapshots")
    assert store.filesystem.type_name == "mock"
    for tx in range(5):
        store.save(_engine().state() if tx == 4 else _empty_state(tx))
    assert store.newest() == 11  # the engine's state is at tx 11
    loaded = store.latest(at_most=11)
    assert loaded is not None and loaded.values.size == _engine().state().values.size
    selector = pafs.FileSelector(store.directory)
    assert len(store.filesystem.get_file_info(selector)) == KEEP


def test_a_remote_snapshot_is_read_as_a_local_file_then_let_go(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bucket's snapshot is copied to a local temporary file and read from it as a local
    one is (its columns mapped, not on the heap); the file does not outlive the read."""
    monkeypatch.setattr(snapshot_format, "MAPPED_MIN_BYTES", 0)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    store = SnapshotStore.at("mock:///fleet/snapshots")
    expected = _engine().state()
    store.save(expected)
    loaded = store.latest(at_most=expected.tx)
    assert loaded is not None and all(isinstance(c, np.memmap) for c in loaded.columns)
    assert all(np.array_equal(c, e) for c, e in zip(loaded.columns, expected.columns,
                                                    strict=True))
    assert loaded.values.values(np.arange(expected.values.size)) == expected.values.values(
        np.arange(expected.values.size))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("filesystem", ["local", "memory"])
def test_two_writers_and_a_reader_never_see_a_partial_snapshot(tmp_path: Path,
                                                               filesystem: str) -> None:
    """Two workers sharing a store publish snapshots, some of the same transaction, while a
    third reads and both prune: every read is a whole snapshot of a published transaction,
    and a reader that loses a race with pruning reads an older one.

    In memory one writer races the reader: two threads writing into one pyarrow ``mock://``
    filesystem at once corrupt its heap (a segfault, 3 runs in 4 under load here) — a
    limit of the test double, which workers never share (each process has its own)."""
    first = SnapshotStore.at(tmp_path / "s" if filesystem == "local" else "mock:///s")
    writers = [first, SnapshotStore(first.filesystem, first.directory)]
    reader = SnapshotStore(first.filesystem, first.directory)
    expected = _engine().state()
    states = {tx: EngineState(expected.values, expected.columns, expected.schema, tx)
              for tx in range(40)}
    failures: list[BaseException] = []

    def write(store: SnapshotStore, txs: range) -> None:
        try:
            for tx in txs:
                store.save(states[tx])
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=write, args=(writers[0], range(0, 40))),
               threading.Thread(target=write, args=(writers[1], range(10, 40, 2)))]
    if filesystem == "memory":
        threads = threads[:1]
    for thread in threads:
        thread.start()
    reads = 0
    while any(thread.is_alive() for thread in threads) or not reads:
        found = reader.latest(at_most=99)
        if found is not None:
            reads += 1
            assert np.array_equal(found.columns[2], expected.columns[2])
    for thread in threads:
        thread.join()
    assert not failures
    assert reader.newest() == 39
    assert len(reader._snapshots(checkpoint.SUFFIX)) == KEEP


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
    SnapshotStore.at(tmp_path).save(original.state())
    state = SnapshotStore.at(tmp_path).latest(at_most=11)
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
