"""The database model: datoms, attribute schema, and transactions normalised to deltas."""

from workers.db.normalise import Normalised, normalise
from workers.db.schema import BUILTIN_SCHEMA, Attribute, Schema
from workers.db.tx import Datom, TxOps, parse_tx

__all__ = ["BUILTIN_SCHEMA", "Attribute", "Datom", "Normalised", "Schema", "TxOps",
           "normalise", "parse_tx"]
