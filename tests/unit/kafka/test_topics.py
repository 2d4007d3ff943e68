"""Topic names, query-name validation, and creation when no broker answers."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from workers.errors import ErrorCode, WorkersError
from workers.kafka.topics import Topics, check_query_name, create


@pytest.mark.parametrize(("topics", "names"), [
    (Topics(), ("deltalog.tx", "deltalog.queries", "deltalog.progress", "deltalog.dlq",
                "deltalog.results.tri", "deltalog.views.tri")),
    (Topics("test-42"), ("test-42.tx", "test-42.queries", "test-42.progress", "test-42.dlq",
                         "test-42.results.tri", "test-42.views.tri")),
], ids=["default", "custom"])
def test_topic_names(topics: Topics, names: tuple[str, ...]) -> None:
    assert (topics.tx, topics.queries, topics.progress, topics.dlq, topics.results("tri"),
            topics.view("tri")) == names


def test_every_topic_of_a_query_has_its_retention_set() -> None:
    configs = Topics().of_query("tri")
    assert configs["deltalog.results.tri"]["cleanup.policy"] == "delete"
    assert "retention.ms" in configs["deltalog.results.tri"]
    assert configs["deltalog.views.tri"]["cleanup.policy"] == "compact"


def test_view_topics_keep_tombstones_as_long_as_the_setting_says() -> None:
    assert Topics().of_query("tri")["deltalog.views.tri"]["delete.retention.ms"] == "120000"
    configs = Topics(view_tombstones_ms=5000).of_query("tri")
    assert configs["deltalog.views.tri"]["delete.retention.ms"] == "5000"
    assert "delete.retention.ms" not in configs["deltalog.results.tri"]


def test_topics_are_frozen() -> None:
    with pytest.raises(AttributeError):
        Topics().prefix = "other"  # type: ignore[misc]


@pytest.mark.parametrize("name", ["tri", "Q1", "people.by-age_2", "-", "x" * 200],
                         ids=["word", "digits", "punctuation", "dash", "200-chars"])
def test_valid_query_names(name: str) -> None:
    assert check_query_name(name) == name


@pytest.mark.parametrize("name", ["", "two words", "a/b", "x" * 201, "café", "a:b", "\n"],
                         ids=["empty", "space", "slash", "201-chars", "non-ascii", "colon",
                              "newline"])
def test_invalid_query_names(name: str) -> None:
    with pytest.raises(WorkersError, match="invalid query name") as caught:
        check_query_name(name)
    assert caught.value.code is ErrorCode.QUERY_SHAPE
    assert caught.value.form == name


def test_trailing_newline_is_refused() -> None:
    with pytest.raises(WorkersError) as caught:
        check_query_name("tri\n")
    assert caught.value.code is ErrorCode.QUERY_SHAPE


class _Unreachable:
    """An admin client whose broker never answers (what a refused login looks like too)."""

    def list_topics(self, timeout: float) -> None:
        raise KafkaException(KafkaError(KafkaError._TRANSPORT, "Broker transport failure"))


def test_create_without_a_broker_is_a_kafka_error_naming_the_topics() -> None:
    with pytest.raises(WorkersError, match="cannot list the topics to create tx, dlq") as err:
        create(_Unreachable(), {"tx": {}, "dlq": {}})  # type: ignore[arg-type]
    assert err.value.code == ErrorCode.KAFKA
