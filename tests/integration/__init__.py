"""Tests against real services: the Kafka broker (marker ``kafka``), Spark (marker ``spark``)."""
