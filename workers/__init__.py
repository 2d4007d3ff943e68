"""deltalog: live EDN-Datalog views, kept up to date by incremental worst-case-optimal joins.

The engine (in one process, no Kafka), from the outside in:

- ``engine``        the embedding API (``Engine``): transact, register, result, query
- ``database``      where the datoms live (memory, or Spark's state) and its replication
- ``db``            transaction forms → effective delta (Datomic semantics, schema)
- ``datalog``       EDN query → checked AST
- ``plan``          AST → plan IR (frozen data) and ``explain``
- ``executors``     GenericJoin over the arrangements, the delta/recursive/binary terms, rules;
                    ``executors.spark`` runs the same plans on Spark
- ``arrangements``  the EAV, AEV, AVE, VAE tries, held once and shared by every query
- ``find``          the ``:find`` stage: aggregates (grouped, kept live), ``:with`` bags, shapes
- ``pull``          ``(pull ?e pattern)`` in ``:find``: maps read from the database, kept live
- ``zset``          Z-sets and the DBSP stream operators, the kind-aware row
- ``edn``           EDN text ↔ Python forms
- ``errors``        every error deltalog raises, each with a stable code
- ``testing``       the from-scratch oracle the tests check the engine against, and fakes of
                    the worker's Kafka (above the service: they implement its ports)

The service (the engine as a fleet of workers over Kafka):

- ``kafka``         the local broker, Avro records, topics, the tx source and result sink, the
                    clients users run (send transactions, add queries, follow results)
- ``runtime``       the worker: ticks as Kafka transactions, recovery, snapshots, the queries it
                    owns in the group, back-pressure, health and status
- ``sinks``         a query's view kept in PostgreSQL, from its topics
- ``config``        the worker's settings: defaults < TOML file < ``DELTALOG_*`` < flags
- ``metrics``       every Prometheus metric the worker exports
- ``logs``          the command line's log format: text or JSON lines
- ``cli``           the ``deltalog`` command (``__main__``: ``python -m workers``)
- ``demo``          ``deltalog demo``: a broker, a worker and live queries over a real graph
                    (``--embedded``: the engine alone)
- ``progress``      a progress bar for ``deltalog tx --file`` and the demo

Imports run down the layers only (``tests/unit/test_layers.py``; ``docs/layout.md``, "Import
layers"): errors < edn < zset < arrangements < db < datalog < plan < find, pull < executors
< database < engine, config < kafka < runtime, sinks < testing < demo < cli.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from workers.engine import Engine

__version__ = "0.1.0"
__all__ = ["Engine", "__version__"]


def __getattr__(name: str) -> Any:
    """``workers.Engine`` imports the engine on first use: a submodule's import
    (``workers.errors``, ``workers.edn``) need not pay its ~0.1 s."""
    if name == "Engine":
        from workers.engine import Engine

        return Engine
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
