"""Pull in ``:find``: entities shown as the maps a pull pattern reads around them.

:mod:`workers.pull.read` pulls an entity's map from the database and finds which entities'
maps a tick's datoms may change; :mod:`workers.pull.maintain` keeps a query's rows with their
maps, re-pulling only those entities each tick.  Pull patterns are parsed with the query
(:mod:`workers.datalog.pull`).
"""

from workers.pull.maintain import Pulling
from workers.pull.read import PullReader

__all__ = ["PullReader", "Pulling"]
