"""cdc: Debezium-style change data capture with a Kafka Connect-shaped runtime."""

__version__ = "0.1.0"
