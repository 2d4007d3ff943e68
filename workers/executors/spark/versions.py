"""Which version of Spark's state the tasks open, and the one object that moves it.

The state's files (:mod:`~workers.executors.spark.state`) are written by one
:class:`~workers.executors.spark.state.StateStore`; a shared state is read by followers
(:mod:`~workers.executors.spark.shared`).  :class:`StateVersions` holds both sides for one
driver, so that nothing else writes either: the executor only reads the version its jobs
ship (:meth:`StateVersions.manifest`); the engine's database (under ``executor=spark``) or
the Spark backend (under ``auto``, mirroring the local arrangements) moves it:

1. :meth:`~StateVersions.applied`: a tick's delta appended as the next version — or, for a
   follower, the version its writer wrote, reached once its engine stepped to it;
2. :meth:`~StateVersions.moved`: a tick that changed nothing restamps a shared version (the
   position moved);
3. :meth:`~StateVersions.reset` / :meth:`~StateVersions.restored`: the state replaced (a
   snapshot), or dropped to be written again from the arrangements on next use;
4. :meth:`~StateVersions.follow`, :meth:`~StateVersions.follow_anew`,
   :meth:`~StateVersions.lead`, :meth:`~StateVersions.step_down`: a follower's steps, and a
   shared state's changes of writer (:mod:`workers.database.replication`).
"""

from __future__ import annotations

from collections.abc import Callable

from workers.arrangements import ArrangementRegistry
from workers.arrangements.batch import Ids, set_weights
from workers.arrangements.delta import DatomColumns
from workers.errors import ErrorCode, WorkersError
from workers.executors.spark.dictionary import DriverValues
from workers.executors.spark.shared import Followed, FollowerIds, StateFollower
from workers.executors.spark.state import Compactor, Indexer, Manifest, Marks, StateStore
from workers.executors.spark.state_dictionary import StateDictionary


class StateVersions:
    """The driver's side of Spark's state: the store it writes, or the follower it is of
    another's (see the module's docstring)."""

    def __init__(self, db: ArrangementRegistry, location: str | None, compactor: Compactor,
                 indexer: Indexer, share: bool = False, retain_seconds: float = 0.0,
                 opened: StateFollower | None = None, follows: bool = False) -> None:
        """``db``: the arrangements a state not written yet is written from, whose
        dictionary a shared state writes beside it; ``share``: other engines follow the
        state (:mod:`shared`), whose replaced files are kept ``retain_seconds``;
        ``opened``: a shared state found at ``location``, which this driver ``follows``
        (another engine writes it) or writes on from its newest version (its writer before
        stopped there); ``compactor``, ``indexer``: the store's jobs (Spark's)."""
        self.db = db
        self.store = StateStore(location, compactor=compactor, indexer=indexer,
                                values=DriverValues(lambda: self.db.ids) if share else None,
                                retain_seconds=retain_seconds, shared=share)
        self.opened = opened
        self.follower = opened if follows else None
        self._following: Manifest | None = None  # the version a follower steps to
        if follows:
            assert opened is not None
            self.store.reached(opened.manifest)
        elif opened is not None and not self.store.take_over(opened.manifest):
            raise WorkersError(f"another writer wrote the Spark state at {location!r} while "
                               "this one took it up: this one stops writing it",
                               code=ErrorCode.SPARK)
        # What a sharing writer stamps each version with (its driver's window says).
        self.marks: Callable[[], Marks] | None = None

    def hold_dictionary(self) -> None:
        """The state holds the driver's dictionary, shared or not (``executor=spark``: the
        driver keeps none of its own, :mod:`~workers.executors.spark.state_dictionary`);
        called before the state is first written."""
        assert self.store.manifest is None or self.store.values is not None
        if self.store.values is None:
            self.store.values = DriverValues(lambda: self.db.ids)

    def manifest(self) -> Manifest:
        """The state's current version, written from the arrangements on first use."""
        if self.store.manifest is None:
            return self.reset(*self.db.columns())
        return self.store.manifest

    def applied(self, delta: DatomColumns) -> None:
        """The arrangements took ``delta``: append it to the state (once written) — a
        follower's was written by its writer: it is at that version now."""
        if self.follower is not None:
            if self._following is not None:
                self.store.reached(self._following)
                self.follower.manifest = self._following
                self._following = None
        elif self.store.manifest is not None and len(delta):
            self.store.append(delta, self._marks())
            if isinstance(self.db.ids, StateDictionary):  # a follower took writing over
                self.db.ids.reached(self.store.manifest)

    def moved(self) -> None:
        """A tick changed nothing: a shared state's writer stamps its version anew (its
        position moved)."""
        marks = self._marks()
        if (self.follower is None and self.store.manifest is not None and marks is not None
                and self.store.shared):
            self.store.restamp(marks)

    def lead(self) -> bool:
        """A follower writes the state on from the version it is at (its writer stopped):
        whether it does — False, another writer published meanwhile (the follower follows
        on, and tries again)."""
        assert self.follower is not None, "a follower leads"
        if not self.store.take_over(self.follower.manifest):
            return False
        self.follower = None
        return True

    def step_down(self, memory_values: int) -> None:
        """A writer stops writing (another takes over) and follows the state from here.
        The values it numbered since its last version (a registration's constants) are
        published first, with an empty batch: else the next writer would number other
        values with their ids, and this driver, following, would read them as its own
        (silently wrong ids, or "number a value twice").  If another writer has published
        meanwhile, that publication is refused and this driver stops (``append``): a
        restart follows the state from its files.  Its dictionary is the state's from then
        on (``memory_values`` of it in memory): it keeps none of its own."""
        assert self.follower is None and self.store.manifest is not None, "a writer steps down"
        self.store.settle()  # its compaction published, or none is running
        stamp = self.store.manifest.stamp
        if stamp is not None and self.db.ids.size > stamp.marks.values:
            self.store.append(DatomColumns.of({}), self._marks())
            self.store.settle()
        manifest = self.store.manifest
        self.follower = self.opened = StateFollower(
            self.store.location, manifest, FollowerIds(StateDictionary(manifest, memory_values)))

    def follow(self) -> Followed | None:
        """A follower's step to its writer's newest version (None: it is at it); the
        version is this driver's once the engine has stepped (:meth:`applied`)."""
        assert self.follower is not None, "a follower follows"
        followed = self.follower.next()
        self._following = None if followed is None else followed.manifest
        return followed

    def follow_anew(self, memory_values: int) -> StateFollower:
        """A follower that cannot step (:class:`~workers.executors.spark.shared.FollowerBehind`)
        opens the state anew at its writer's newest version, its dictionary read again
        from the files, as a follower starting does (``memory_values`` of it in memory)."""
        assert self.follower is not None, "a follower follows anew"
        follower = self.follower = self.opened = StateFollower.open(self.store.location,
                                                                    memory_values)
        self.store.reached(follower.manifest)
        self._following = None
        return follower

    def restored(self) -> None:
        """The arrangements were replaced: the state is written again on next use."""
        self.store.drop()

    def idle(self) -> None:
        """Nothing to step: the state's batches summed into its base while there is time
        (:meth:`StateStore.compact_idle`) — by its writer."""
        if self.store.manifest is not None and self.follower is None:
            self.store.compact_idle()

    def reset(self, e: Ids, a: Ids, v: Ids) -> Manifest:
        """The state replaced by the datoms ``e, a, v`` (a set)."""
        return self.store.reset(DatomColumns(e, a, v, set_weights(len(e))), self._marks())

    def _marks(self) -> Marks | None:
        """What the writer of a shared state stamps its next version with (None: the state
        is its own)."""
        return None if self.marks is None or self.store.values is None else self.marks()
