"""The reads a transaction's resolution and normalisation make of the database."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

from workers.db.tx import Datom


class DatabaseReader(Protocol):
    """The reads normalisation makes: the shared state, or the state plus a tick's
    pending delta (:class:`~workers.arrangements.PendingReader`)."""

    def has(self, datom: Datom) -> bool: ...

    def values(self, e: Any, a: Any) -> Iterator[Any]: ...

    def entity_datoms(self, e: Any) -> Iterator[Datom]: ...

    def referrers(self, v: Any, a: Any) -> Iterator[Datom]: ...

    def attribute_datoms(self, a: Any) -> Iterator[Datom]: ...
