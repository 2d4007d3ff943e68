"""Replication: one engine writes a database, others follow it (under ``executor=spark``, a
fleet's shared state: :mod:`~workers.executors.spark.shared`).

An engine's database is in one of three roles, which a :class:`Replication` says and
changes:

- **alone**: nobody else reads it (the memory database; a Spark state not shared);
- **writer**: it writes each version, stamped with the :data:`WorkerStamp` its worker
  gave last (:meth:`Replication.stamp`) — opaque here: today the refused transactions
  whose dead letters are not committed, so that a writer taking over writes them;
- **follower**: it writes nothing and steps its queries to its writer's newest version
  (:meth:`Replication.follow`); one that cannot step there (its writer no longer keeps the
  versions between) opens the database anew at it (:meth:`Replication.follow_anew`).

The changes of role, each at the newest version (the worker decides when):

1. a follower :meth:`Replication.lead`\\ s (its writer stopped): it numbers its own values in
   the writer's dictionary and writes on, in the same epoch;
2. a writer :meth:`Replication.step_down`\\ s (another took writing over) and follows from
   the version it wrote last.

Either binds the engine's queries anew (their constants' ids are the new dictionary's):
the engine does that, the replication only says when.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from workers.arrangements.delta import DatomColumns
from workers.db import Schema
from workers.errors import ErrorCode, WorkersError

# What a writer stamps its versions with, for the worker: opaque to the database.
WorkerStamp = tuple[tuple[int, str, str], ...]


@dataclass(frozen=True, slots=True)
class Caught:
    """A follower's step to its writer's newest version: the delta since the version it
    was at, the schema and position there, and whether values it had numbered itself now
    have the writer's ids (its queries must be bound anew before they step)."""

    delta: DatomColumns
    schema: Schema
    position: int
    renumbered: bool


class Replication(Protocol):
    """An engine's role towards other engines sharing its database (the module's)."""

    @property
    def following(self) -> bool:
        """Following a database another engine writes: its transactions are the writer's."""

    def stamp(self, stamp: WorkerStamp) -> None:
        """What a writer stamps its next versions with (alone: nothing)."""

    def stamped(self) -> WorkerStamp:
        """What the version the database is at was stamped with."""

    def lead(self) -> bool:
        """A follower becomes the writer, from its writer's newest version, which it must
        be at: False when it is not (:meth:`follow` first)."""

    def step_down(self) -> None:
        """A writer stops writing and follows from the version it is at."""

    def follow(self) -> Caught | None:
        """A follower's step to its writer's newest version (None: it is at it)."""

    def reached(self) -> None:
        """The engine stepped nothing to the version :meth:`follow` caught (its delta is
        empty): the database is at it now."""

    def follow_anew(self) -> tuple[Schema, int]:
        """A follower that cannot step opens the database anew at its writer's newest
        version, as a follower starting does: that version's schema and position."""


def not_following() -> WorkersError:
    """The error of following, or leading, without following a writer."""
    return WorkersError("only an engine following a Spark state follows it "
                        "(executor=spark, SparkSettings.follow)", code=ErrorCode.CONFIG)


def not_writing() -> WorkersError:
    """The error of stepping down without writing a shared database."""
    return WorkersError("only the writer of a shared Spark state steps down",
                        code=ErrorCode.CONFIG)


class Alone:
    """The role of a database nobody else reads: it stamps nothing, follows no one."""

    @property
    def following(self) -> bool:
        return False

    def stamp(self, stamp: WorkerStamp) -> None:
        pass

    def stamped(self) -> WorkerStamp:
        return ()

    def lead(self) -> bool:
        raise not_following()

    def step_down(self) -> None:
        raise not_writing()

    def follow(self) -> Caught | None:
        raise not_following()

    def reached(self) -> None:
        raise not_following()

    def follow_anew(self) -> tuple[Schema, int]:
        raise not_following()
