"""One root for every error deltalog raises, each with a stable code and the form it is about."""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class ErrorCode(StrEnum):
    """Stable machine-readable codes; the message is for people, the code for programs."""

    EDN_SYNTAX = "edn-syntax"
    QUERY_SHAPE = "query-shape"
    QUERY_UNSUPPORTED = "query-unsupported"
    QUERY_UNSAFE = "query-unsafe"
    QUERY_INPUTS = "query-inputs"
    TX_SHAPE = "tx-shape"
    TX_TYPE = "tx-type"
    TX_CONFLICT = "tx-conflict"
    TX_LOOKUP = "tx-lookup"  # a lookup ref names no entity, or its attribute is not unique
    TX_UNIQUE = "tx-unique"  # a unique value asserted for a second entity
    TX_CAS = "tx-cas"  # a compare-and-swap found another value
    SCHEMA = "schema"
    UNKNOWN_QUERY = "unknown-query"
    DUPLICATE_QUERY = "duplicate-query"
    CONFIG = "config"
    USAGE = "usage"  # a command given the wrong arguments, found before it does anything
    UNDECODABLE = "undecodable"
    UNKNOWN_SCHEMA = "unknown-schema"
    KAFKA = "kafka"
    BROKER = "broker"
    REGISTRY = "registry"
    SPARK = "spark"
    SINK = "sink"  # a sink cannot keep its table (the table is not its own, a value misfits)
    SINK_FENCED = "sink-fenced"  # another sink keeps the table


class WorkersError(Exception):
    """Root of all deltalog errors: ``code`` says what kind, ``form`` what it is about."""

    code: ErrorCode = ErrorCode.CONFIG

    def __init__(self, message: str, *, code: ErrorCode | None = None, form: Any = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.form = form


class EdnSyntaxError(WorkersError):
    """EDN text that does not parse."""

    code = ErrorCode.EDN_SYNTAX


class QueryError(WorkersError):
    """A query that is malformed, unsafe, unsupported or given the wrong inputs."""

    code = ErrorCode.QUERY_SHAPE


class TransactionError(WorkersError):
    """A transaction refused as a whole (shape, type, conflict or schema problem)."""

    code = ErrorCode.TX_SHAPE


class UnknownQueryError(WorkersError):
    """A query name that is not registered."""

    code = ErrorCode.UNKNOWN_QUERY
