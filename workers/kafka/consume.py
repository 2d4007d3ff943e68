"""The one loop every deltalog consumer shares over what ``consume`` returned."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from confluent_kafka import KafkaError, Message

from workers.errors import ErrorCode, WorkersError


def data_messages(messages: Iterable[Message], topic: str) -> Iterator[Message]:
    """The records among ``messages``: end-of-partition events are skipped, any other error
    raises (the caller is reading a single, known partition)."""
    for message in messages:
        error = message.error()
        if error is None:
            yield message
        elif error.code() != KafkaError._PARTITION_EOF:
            raise WorkersError(f"reading {topic}: {error}", code=ErrorCode.KAFKA)
