"""MySQL/MariaDB source connector: consistent snapshot, then binlog streaming (Debezium-compatible)."""

__version__ = "0.1.0"
