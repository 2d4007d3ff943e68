"""Kafka I/O: the local broker, Avro framing, the tx source and result sink."""
