"""The worker runtime: recovery, ticks in Kafka transactions, snapshots, registrations."""
