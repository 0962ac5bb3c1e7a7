"""Debezium's Single Message Transforms (debezium-core's `io.debezium.transforms` package).

Each SMT is registered under Debezium's class name (plugins/debezium-core/pyproject.toml), so a
connector config written for Debezium on Kafka Connect works unchanged. They are built on the
cdc.api Transformation SPI only, like any plugin.
"""
