"""One engine's value dictionary: every value ↔ a dense integer id, shared by every index.

Ids are 0, 1, 2, ... in order of first sight and never change, so columns of ids written
once (a batch, later a snapshot) stay valid.  Two values get one id when they are equal and
of the same kind (``docs/semantics.md``): a long, a double and a boolean are different values
as in Datomic (``1``, ``1.0`` and ``true`` get three ids, although Python finds them equal),
a plain ``edn_format`` keyword and the interned one get one id, ``"1"`` and ``1`` two.  So
``value(id)`` gives back exactly the value interned: one dictionary serves every position
of every datom, and a result's ``true`` must not come back as the entity id ``1``.

Ints within int64 are most of the data and cost ~100 bytes each in a Python dict, so they
live in NumPy: a sorted int64 key column with the ids beside it, plus a small dict of the
latest ones merged in when it reaches a sixteenth of the column (geometric: each int is
re-sorted O(log n) times).  Every other value (text, keywords, uuids, instants, doubles,
booleans, longer ints) sits in a dict, doubles and booleans under a key tagged with their
type.  Invariant: an int of the column's range is in exactly one of the column and the
recent dict.

What a dictionary answers is the :class:`Numbering` protocol: :class:`ValueIds` is the one
in memory; a driver under Spark reads its state's, in the state's files
(:class:`~workers.executors.spark.state_dictionary.StateDictionary`), and a follower of a
shared state its writer's with ids of its own above it
(:class:`~workers.executors.spark.shared.FollowerIds`); a snapshot's on its way into the state
is written to files as it is read (:class:`~workers.arrangements.spilled.SpilledValueIds`).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from workers.arrangements.batch import sorted_distinct
from workers.zset.row import SCALARS, typed

IdArray = npt.NDArray[np.int32]
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
INT_KIND, OBJECT_KIND = 0, 1  # per id: in the int column (payload: the int) or not (an index)
_MERGE_MIN = 1024  # recent numbers kept in the dict before the first merge
MAX_IDS = 2**31  # ids are int32 columns in the batches
# Ints found in the column are remembered (at most this many, then forgotten at once): a
# tick looks each of its values up twice or more (normalising, numbering the delta), and a
# binary search of the column costs several dict lookups (1.2 against 0.16 µs among 10^4
# ints, a busy machine).  Ids never change, so a remembered one never goes stale.
_FOUND_MEMO = 1024
# Small non-negative ints (entity ids, a graph's nodes) are also found through ``_direct``,
# one int32 per int below a bound: an id in two array reads, no search (a single-edge tick
# looks up its two ints three times: ~1 µs each by search).  The bound grows with the
# column, at most this many slots per int in it, so sparse ints cost nothing.
DIRECT_SPREAD = 2


def int_key(x: Any) -> int | None:
    """``x`` itself when it is an int of the column's range (not a bool), else None."""
    return x if type(x) is int and INT64_MIN <= x <= INT64_MAX else None


def object_key(x: Any) -> Any:
    """The dict key of a value outside the int column: doubles and booleans tagged with
    their type, so that ``1.0``, ``True`` and a long ``1`` stay apart — and so collections
    (a function's vector, set or map) with their elements' kinds tagged
    (:func:`~workers.zset.row.typed`): ``[1]`` and ``[true]`` are two values too."""
    kind = type(x)
    if kind is float or kind is bool:
        return (kind, x)
    return x if kind in SCALARS else typed(x)


class Numbering(Protocol):
    """Values ↔ ids, as the engine, the executors and the normalisers ask a dictionary."""

    @property
    def size(self) -> int:
        """How many values have ids (the writer's numbering: ids ``0 .. size - 1``)."""

    @property
    def resident(self) -> int:
        """How many values are held in memory."""

    @property
    def nbytes(self) -> int:
        """The bytes the dictionary's arrays hold in memory."""

    def lookup(self, x: Any) -> int | None:
        """The id of ``x``; None when it has none (never assigns one)."""

    def intern(self, x: Any) -> int:
        """The id of ``x``, assigned now if it has none."""

    def intern_values(self, xs: Sequence[Any]) -> IdArray: ...

    def intern_ints(self, xs: npt.NDArray[np.int64]) -> IdArray: ...

    def lookup_values(self, xs: Sequence[Any]) -> IdArray:
        """The ids of ``xs``, -1 for a value with none."""

    def lookup_ints(self, xs: npt.NDArray[np.int64]) -> IdArray: ...

    def value(self, i: int) -> Any:
        """The value of id ``i``, exactly as interned."""

    def values(self, ids: npt.NDArray[np.integer[Any]]) -> list[Any]: ...

    def objects(self, ids: IdArray) -> list[Any]:
        """The values of ``ids`` that are not ints (of the int64 range)."""

    def copy(self) -> Numbering:
        """A dictionary of the same entries, sharing nothing with this one."""

    def entries(self) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.int64], list[Any]]:
        """The entries in id order (what a snapshot stores)."""


class ValueIds:
    """The dictionary: ``intern`` (assigning ids), ``lookup`` (never assigning), ``value``."""

    __slots__ = ("_direct", "_direct_view", "_found", "_id_view", "_key_ids", "_key_view",
                 "_keys", "_kind", "_kind_view", "_objects", "_payload", "_payload_view",
                 "_recent", "_values", "size")

    def __init__(self) -> None:
        self._keys = np.empty(0, np.int64)  # sorted numeric class keys ...
        self._key_ids: IdArray = np.empty(0, np.int32)  # ... and their ids
        self._key_view, self._id_view = self._keys.data, self._key_ids.data
        self._recent: dict[int, int] = {}  # numeric key -> id, not yet in the columns
        self._found: dict[int, int] = {}  # ints lately found in the columns -> their ids
        self._direct: IdArray = np.empty(0, np.int32)  # int x -> its column id, or -1
        self._direct_view = self._direct.data
        self._objects: dict[Any, int] = {}  # any other value -> id
        self._values: list[Any] = []  # object payloads (the dict's keys, by insertion)
        self._kind = np.empty(16, np.int8)  # per id: INT_KIND or OBJECT_KIND
        self._payload = np.empty(16, np.int64)  # per id: the number, or an index in _values
        self._kind_view, self._payload_view = self._kind.data, self._payload.data
        self.size = 0

    def lookup(self, x: Any) -> int | None:
        """The id of ``x``, or None when it was never interned (a query constant no datom
        holds: its lookups are empty)."""
        if type(x) is int and 0 <= x < len(self._direct_view):  # in the column exactly
            direct: int = self._direct_view[x]                   # when found here
            return direct if direct >= 0 else self._recent.get(x)
        if type(x) is not int or not INT64_MIN <= x <= INT64_MAX:
            return self._objects.get(object_key(x))
        found = self._recent.get(x)
        if found is None:
            found = self._found.get(x)
        if found is not None:
            return found
        keys = self._key_view  # bisect on a memoryview: Python ints, no NumPy call
        i = bisect_left(keys, x)
        if i == len(keys) or keys[i] != x:
            return None
        found = self._id_view[i]
        if len(self._found) >= _FOUND_MEMO:
            self._found.clear()
        self._found[x] = found
        return found  # type: ignore[no-any-return]

    def objects(self, ids: IdArray) -> list[Any]:
        """The values of ``ids`` that are not longs, each distinct one once (a column of
        longs is looked at without a Python call per value)."""
        distinct = sorted_distinct(ids)
        chosen = distinct[self._kind[distinct] == OBJECT_KIND]
        return [self._values[i] for i in self._payload[chosen].tolist()]

    def intern(self, x: Any) -> int:
        """The id of ``x``, assigned now when it has none."""
        found = self.lookup(x)
        if found is not None:
            return found
        key = int_key(x)
        if key is None:
            new = self._objects[object_key(x)] = self._append(OBJECT_KIND, len(self._values))
            self._values.append(x)
            return new
        new = self._recent[key] = self._append(INT_KIND, key)
        if len(self._recent) >= max(_MERGE_MIN, len(self._keys) // 16):
            self._merge_recent()
        return new

    def intern_ints(self, xs: npt.NDArray[np.int64]) -> IdArray:
        """The ids of a column of ints (a bulk load), new ones numbered in order of first
        appearance: the same ids as ``intern`` called on each in turn.  Ints ``_direct``
        knows are read there (a bulk load names its entities again and again); the rest are
        numbered through one sort."""
        self._merge_recent()
        ids = np.full(len(xs), -1, np.int32)
        inside = np.flatnonzero((xs >= 0) & (xs < len(self._direct)))
        ids[inside] = self._direct[xs[inside]]
        unknown = np.flatnonzero(ids < 0)
        if len(unknown):
            ids[unknown] = self._intern_unknown_ints(xs[unknown])
        return ids

    def intern_values(self, xs: Sequence[Any]) -> IdArray:
        """:meth:`intern` of each value in turn (a column's distinct objects)."""
        return np.fromiter(map(self.intern, xs), np.int32, len(xs))

    def lookup_values(self, xs: Sequence[Any]) -> IdArray:
        """:meth:`lookup` of each value, -1 for a value with no id."""
        found = map(self.lookup, xs)
        return np.fromiter((-1 if i is None else i for i in found), np.int32, len(xs))

    def lookup_ints(self, xs: npt.NDArray[np.int64]) -> IdArray:
        """:meth:`lookup` of a column of ints, -1 for an int with no id: ``_direct`` where it
        reaches (exact once the recent ones are merged), a search of the column beyond."""
        self._merge_recent()
        ids = np.full(len(xs), -1, np.int32)
        reached = (xs >= 0) & (xs < len(self._direct))
        inside = np.flatnonzero(reached)
        ids[inside] = self._direct[xs[inside]]
        beyond = np.flatnonzero(~reached)
        if len(beyond) and len(self._keys):
            pos = np.minimum(self._keys.searchsorted(xs[beyond]), len(self._keys) - 1)
            known = self._keys[pos] == xs[beyond]
            ids[beyond[known]] = self._key_ids[pos[known]]
        return ids

    def _intern_unknown_ints(self, xs: npt.NDArray[np.int64]) -> IdArray:
        """:meth:`intern_ints` of ints some of which ``_direct`` does not know (the recent
        ones merged in the column)."""
        uniq, first, inverse = np.unique(xs, return_index=True, return_inverse=True)
        uniq_ids = np.zeros(len(uniq), np.int32)
        known = np.zeros(len(uniq), bool)
        if len(self._keys):  # sorted needles: the search walks the column once
            pos = np.minimum(self._keys.searchsorted(uniq), len(self._keys) - 1)
            known = self._keys[pos] == uniq
            uniq_ids[known] = self._key_ids[pos[known]]
        fresh = np.flatnonzero(~known)
        fresh = fresh[np.argsort(first[fresh], kind="stable")]  # in order of appearance
        start = self.size
        if start + len(fresh) > MAX_IDS:
            raise OverflowError(f"more than {MAX_IDS} distinct values: ids are int32")
        self._reserve(start + len(fresh))
        self._kind[start:start + len(fresh)] = INT_KIND
        self._payload[start:start + len(fresh)] = uniq[fresh]
        self.size += len(fresh)
        uniq_ids[fresh] = np.arange(start, self.size, dtype=np.int32)
        if len(fresh):
            ordered = np.sort(fresh)  # back in key order, for the insertion
            self._insert(uniq[ordered], uniq_ids[ordered])
        return uniq_ids[inverse.reshape(-1)]

    def value(self, i: int) -> Any:
        """The value interned under id ``i`` (the first of its equals seen: a plain and an
        interned keyword share an id)."""
        payload = self._payload_view[i]  # memoryviews: Python ints, no NumPy scalar
        return self._values[payload] if self._kind_view[i] == OBJECT_KIND else payload

    def values(self, ids: npt.NDArray[np.integer[Any]]) -> list[Any]:
        """:meth:`value` of every id of a column, in order: longs straight from the payload
        column (one NumPy call), the others one by one."""
        payloads = self._payload[ids]
        objects = np.flatnonzero(self._kind[ids] == OBJECT_KIND)
        if not len(objects):
            return payloads.tolist()  # type: ignore[no-any-return]
        out = payloads.astype(object)
        out[objects] = [self._values[i] for i in payloads[objects].tolist()]
        return out.tolist()  # type: ignore[no-any-return]

    def copy(self) -> ValueIds:
        """An independent copy (a snapshot's: the engine goes on numbering new values)."""
        other = ValueIds.__new__(ValueIds)
        other._keys, other._key_ids = self._keys.copy(), self._key_ids.copy()
        other._key_view, other._id_view = other._keys.data, other._key_ids.data
        other._recent, other._objects = dict(self._recent), dict(self._objects)
        other._found = {}
        other._direct = self._direct.copy()
        other._direct_view = other._direct.data
        other._values = list(self._values)
        other._kind, other._payload = self._kind[:self.size].copy(), self._payload[
            :self.size].copy()
        other._kind_view, other._payload_view = other._kind.data, other._payload.data
        other.size = self.size
        return other

    def entries(self) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.int64], list[Any]]:
        """The dictionary as plain data (what a snapshot stores): per id its kind (0: an int,
        1: an object) and payload (the int, or the object's index in the list), and the
        objects.  Views of the live columns: copy them before the engine goes on."""
        return self._kind[:self.size], self._payload[:self.size], self._values

    @classmethod
    def from_entries(cls, kinds: npt.NDArray[np.int8], payloads: npt.NDArray[np.int64],
                     objects: list[Any]) -> ValueIds:
        """The dictionary of :meth:`entries`: every value keeps its id.  Raises ValueError
        when they do not describe one (a damaged or forged snapshot)."""
        size = len(kinds)
        is_int = kinds == INT_KIND
        if (len(payloads) != size or size > MAX_IDS or not np.all(is_int | (kinds == OBJECT_KIND))
                or not np.array_equal(payloads[~is_int], np.arange(len(objects)))):
            raise ValueError("the value entries do not describe a dictionary")
        ids = cls()
        int_ids = np.flatnonzero(is_int).astype(np.int32)
        order = np.argsort(payloads[int_ids])
        keys = payloads[int_ids][order].astype(np.int64)
        ids._objects = {object_key(x): int(i) for x, i in zip(
            objects, np.flatnonzero(~is_int).tolist(), strict=True)}
        if len(ids._objects) != len(objects) or np.any(keys[1:] == keys[:-1]) or any(
                int_key(x) is not None for x in objects):
            raise ValueError("a value appears twice in the dictionary")
        ids._keys, ids._key_ids = keys, int_ids[order]
        ids._key_view, ids._id_view = ids._keys.data, ids._key_ids.data
        ids._cover(ids._keys, ids._key_ids)
        ids._values = list(objects)
        ids._kind, ids._payload = kinds.astype(np.int8), payloads.astype(np.int64)
        ids._kind_view, ids._payload_view = ids._kind.data, ids._payload.data
        ids.size = size
        return ids

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without the memoryviews (they are rebuilt from the columns)."""
        state = {name: getattr(self, name) for name in self.__slots__}
        for view in ("_key_view", "_id_view", "_kind_view", "_payload_view", "_direct_view"):
            del state[view]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            setattr(self, name, value)
        self._key_view, self._id_view = self._keys.data, self._key_ids.data
        self._kind_view, self._payload_view = self._kind.data, self._payload.data
        if "_direct" not in state:  # pickled before ``_direct``
            self._direct = np.empty(0, np.int32)
            self._cover(self._keys, self._key_ids)
        self._direct_view = self._direct.data

    @property
    def resident(self) -> int:
        """How many of the values are held in memory (all of them here)."""
        return self.size

    @property
    def nbytes(self) -> int:
        """The NumPy columns' bytes in use (the dicts of recent and non-numeric values not
        counted)."""
        return (self._keys.nbytes + self._key_ids.nbytes + self._direct.nbytes
                + self.size * (1 + 8))

    def _append(self, kind: int, payload: int) -> int:
        new = self.size
        if new == MAX_IDS:
            raise OverflowError(f"more than {MAX_IDS} distinct values: ids are int32")
        self._reserve(new + 1)
        self._kind[new], self._payload[new] = kind, payload
        self.size += 1
        return new

    def _reserve(self, size: int) -> None:
        """Grow the per-id columns geometrically; pages past ``size`` stay untouched (not
        resident) until used."""
        if size > len(self._kind):
            capacity = max(size, 2 * len(self._kind))
            kind, payload = np.empty(capacity, np.int8), np.empty(capacity, np.int64)
            kind[:self.size], payload[:self.size] = self._kind[:self.size], self._payload[
                :self.size]
            self._kind, self._payload = kind, payload
            self._kind_view, self._payload_view = kind.data, payload.data

    def _merge_recent(self) -> None:
        if self._recent:
            keys = np.fromiter(self._recent, np.int64, len(self._recent))
            ids = np.fromiter(self._recent.values(), np.int32, len(self._recent))
            self._recent.clear()
            order = np.argsort(keys)
            self._insert(keys[order], ids[order])

    def _insert(self, keys: npt.NDArray[np.int64], ids: IdArray) -> None:
        """Merge sorted keys absent from the column into it, keeping it sorted (one copy)."""
        at = self._keys.searchsorted(keys)
        self._keys = np.insert(self._keys, at, keys)
        self._key_ids = np.insert(self._key_ids, at, ids)
        self._key_view, self._id_view = self._keys.data, self._key_ids.data
        self._cover(keys, ids)

    def _cover(self, keys: npt.NDArray[np.int64], ids: IdArray) -> None:
        """Keep ``_direct`` exact after sorted ``keys`` (``ids``) joined the column: grown
        (geometrically, up to ``DIRECT_SPREAD`` slots per int in the column, filled from
        it) to take the largest, then the new keys below its length set."""
        size, limit = len(self._direct), DIRECT_SPREAD * len(self._keys) + _MERGE_MIN
        top = int(keys[-1]) + 1 if len(keys) else 0
        if top > size and size < limit:
            grown = np.full(min(max(top, 2 * size), limit), -1, np.int32)
            grown[:size] = self._direct
            lo, hi = self._keys.searchsorted([size, len(grown)])
            grown[self._keys[lo:hi]] = self._key_ids[lo:hi]
            self._direct, self._direct_view = grown, grown.data
        inside = (keys >= 0) & (keys < len(self._direct))
        self._direct[keys[inside]] = ids[inside]
