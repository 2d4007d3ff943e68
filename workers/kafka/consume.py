"""What every deltalog consumer shares: what has arrived, and the loop over it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from confluent_kafka import Consumer, KafkaError, Message

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


def arrived(consumer: Consumer, max_count: int, wait_s: float) -> list[Message]:
    """What has arrived, up to ``max_count`` messages, waiting at most ``wait_s`` only while
    nothing has.  ``consume(n, timeout)`` itself waits for ``n`` messages or the whole
    timeout: a reader asking for 500 at a time with a 0.5 s timeout saw each change of a
    quiet query up to 0.5 s after its commit."""
    messages = consumer.consume(max_count, 0)
    if messages:
        return messages
    first = consumer.poll(wait_s)
    return [] if first is None else [first, *consumer.consume(max_count - 1, 0)]
