"""A Python callback (a record's acknowledgement) that librdkafka runs while a fatal error
(say, fenced) is pending fails on its first call into the client, and the client call that
served it raises ``SystemError`` with the Kafka error as its cause: the error to handle."""

from __future__ import annotations

from confluent_kafka import KafkaException


def pending_error(error: SystemError) -> KafkaException:
    """The Kafka error a callback met (``error``'s cause); ``error`` itself when it is not
    one (a real defect)."""
    if isinstance(error.__cause__, KafkaException):
        return error.__cause__
    raise error
