"""Benchmarks of the service: workers on a local Kafka broker (fleet, pipeline)."""
