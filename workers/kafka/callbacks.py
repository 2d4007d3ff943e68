"""A Python callback (a record's acknowledgement) that librdkafka runs while a fatal error
(say, fenced) is pending fails on its first call into the client, and the client call that
served it raises ``SystemError``: with the Kafka error as its cause, or none at all
("returned NULL without setting an exception") — the chaos run met both."""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException


def pending_error(error: SystemError) -> KafkaException:
    """The Kafka error a callback met (``error``'s cause), else a fatal one that says what
    the client raised: either way, the transaction is over."""
    if isinstance(error.__cause__, KafkaException):
        return error.__cause__
    return KafkaException(KafkaError(KafkaError._FAIL, f"the Kafka client failed in a "
                                     f"callback: {error}", fatal=True))
