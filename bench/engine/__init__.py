"""Benchmarks of the engine in one process: latency, memory, bootstrap, closure, skew."""
