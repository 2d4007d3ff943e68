"""deltalog: live EDN-Datalog views, kept up to date by incremental worst-case-optimal joins.

Layers, from the outside in:

- ``engine``        the embedding API (``Engine``): transact, register, result, query
- ``db``            transaction forms → effective delta (Datomic semantics, schema)
- ``datalog``       EDN query → checked AST
- ``plan``          AST → plan IR (frozen data) and ``explain``
- ``executors``     GenericJoin over the arrangements; the delta/recursive/binary terms
- ``arrangements``  the EAV, AEV, AVE, VAE tries, held once and shared by every query
- ``zset``          Z-sets and the DBSP stream operators
- ``edn``, ``errors``, ``testing`` (the from-scratch oracle), ``cli``, ``demo``
"""

__version__ = "0.1.0"
__all__ = ["__version__"]
