"""The ``:find`` stage: a query's basis (the executors' rows) → its result, and its shape.

It owns what happens to a query's rows after the join and before they leave the engine:

- :mod:`workers.find.aggregate`   the aggregate functions, a group's value from its bag
- :mod:`workers.find.grouping`    ``Aggregation``: grouped rows kept live from basis changes
- :mod:`workers.find.projection`  ``Projection``: ``:with`` alone, the basis projected to a bag
- :mod:`workers.find.result`      ``result_of``: which of the two (or none) a ``:find`` needs
- :mod:`workers.find.shape`       a one-shot result as its find specification asks
                                  (relation, collection, tuple, scalar; ``:keys`` maps)

The find specification itself is parsed with the query (:class:`workers.datalog.ast.FindSpec`)
and planned as data (:class:`workers.plan.ir.Find`); pulled maps are :mod:`workers.pull`.

Imports: ``zset``, ``edn``, ``datalog`` (the built-in functions, the AST's ``FindSpec``) and
``plan`` (``Find``, ``FindColumn``) — nothing above them.  The executors, ``pull`` and the
engine never are imported here; the engine imports this package.
"""

from workers.find.grouping import Aggregation
from workers.find.projection import Projection
from workers.find.result import result_of
from workers.find.shape import as_maps, shaped

__all__ = ["Aggregation", "Projection", "as_maps", "result_of", "shaped"]
