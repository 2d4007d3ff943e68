"""The local broker's ``server.properties``: PLAINTEXT by default, SASL/PLAIN when asked."""

from __future__ import annotations

from pathlib import Path

import pytest

from workers.kafka.broker import BROKER_USER, BrokerError, LocalBroker, server_properties

LOG_DIR = Path("/tmp/kafka-logs")


def test_default_listener_is_plaintext_without_sasl() -> None:
    properties = server_properties(9092, 9093, LOG_DIR)
    assert properties["listeners"] == "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093"
    assert properties["inter.broker.listener.name"] == "PLAINTEXT"
    assert not [key for key in properties if "sasl" in key]


def test_sasl_listener_with_plain_logins_and_a_plaintext_controller() -> None:
    accounts = {"alice": "pw-a", BROKER_USER: "pw-b"}
    properties = server_properties(9092, 9093, LOG_DIR, accounts)
    assert properties["listeners"] == (
        "SASL_PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093")
    assert properties["advertised.listeners"] == "SASL_PLAINTEXT://127.0.0.1:9092"
    assert properties["listener.security.protocol.map"] == (
        "SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT")
    assert properties["sasl.enabled.mechanisms"] == "PLAIN"
    assert properties["listener.name.sasl_plaintext.plain.sasl.jaas.config"] == (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{BROKER_USER}" password="pw-b" user_alice="pw-a" user_{BROKER_USER}="pw-b";')
    assert properties["log.dirs"] == str(LOG_DIR)  # the rest as by default


@pytest.mark.parametrize("users", [{"alice": 'pw"; user_x="y'}, {"al ice": "pw"}],
                         ids=["quote in password", "space in name"])
def test_credentials_that_would_break_the_jaas_string_are_refused(
        users: dict[str, str]) -> None:
    with pytest.raises(BrokerError, match="names and passwords may hold letters") as refused:
        LocalBroker(sasl_users=users)
    assert not any(password in str(refused.value) for password in users.values())
