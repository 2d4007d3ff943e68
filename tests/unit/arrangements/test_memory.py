"""The datom tries: four indexes of one Z-set, pruned as weights reach zero, and loaded or
reset in place because the executors hold the trie objects."""

from __future__ import annotations

from tests.unit.arrangements.tries import leaves
from workers.arrangements import INDEX_ORDERS, Datom, IndexOrder, MemoryArrangement
from workers.zset import ZSet

DATOMS: ZSet[Datom] = {(1, ":g/to", 2): 1, (1, ":g/to", 3): 1, (2, ":name", "b"): 1}


def _permuted(datoms: ZSet[Datom], order: IndexOrder) -> dict[tuple[object, ...], int]:
    return {tuple(datom[i] for i in order.positions): w for datom, w in datoms.items()}


def test_every_index_holds_the_datoms_in_its_order() -> None:
    arranged = MemoryArrangement(DATOMS)
    for order in INDEX_ORDERS:
        assert leaves(arranged.index(order), 3) == _permuted(DATOMS, order)
    assert (dict(arranged.datoms()), len(arranged)) == (DATOMS, 3)


def test_a_retraction_prunes_the_emptied_branches_of_every_index() -> None:
    arranged = MemoryArrangement(DATOMS)
    arranged.update({(1, ":g/to", 2): -1, (2, ":name", "b"): -1})
    for order in INDEX_ORDERS:
        assert leaves(arranged.index(order), 3) == _permuted({(1, ":g/to", 3): 1}, order)
    assert arranged.weight((1, ":g/to", 2)) == 0
    assert 2 not in arranged.index(IndexOrder.EAV) and "b" not in arranged.index(IndexOrder.VAE)


def test_load_copies_into_the_trie_objects_readers_hold() -> None:
    source, arranged = MemoryArrangement(DATOMS), MemoryArrangement({(9, ":x", 9): 1})
    held = {order: arranged.index(order) for order in INDEX_ORDERS}
    arranged.load(source.tries)
    assert all(arranged.index(order) is held[order] for order in INDEX_ORDERS)
    assert dict(arranged.datoms()) == DATOMS
    arranged.update({(1, ":g/to", 4): 1})
    assert dict(source.datoms()) == DATOMS  # a copy, not the source's tries
    arranged.load(arranged.tries)  # its own tries: copied before they are cleared
    assert len(arranged) == 4


def test_reset_replaces_the_contents_in_the_same_trie_objects() -> None:
    arranged = MemoryArrangement(DATOMS)
    held = {order: arranged.index(order) for order in INDEX_ORDERS}
    arranged.reset({(5, ":y", 6): 1})
    assert all(arranged.index(order) is held[order] for order in INDEX_ORDERS)
    assert dict(arranged.datoms()) == {(5, ":y", 6): 1}
