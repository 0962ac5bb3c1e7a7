"""Topic and schema names: `<prefix>.<db>.<table>` and its `.Key`/`.Value`/`.Envelope` schemas."""

from __future__ import annotations

import re

HEARTBEAT_TOPIC_PREFIX = "__debezium-heartbeat"
_TOPIC_CHAR = re.compile(r"[^a-zA-Z0-9._\-]")


def sanitize_topic(name: str) -> str:
    """Kafka topic names allow `[a-zA-Z0-9._-]`; Debezium replaces anything else with `_`."""
    return _TOPIC_CHAR.sub("_", name)


class TopicNamingStrategy:
    """Debezium's DefaultTopicNamingStrategy for relational connectors."""

    def __init__(self, prefix: str, delimiter: str = ".", transaction_suffix: str = "transaction") -> None:
        self.prefix = prefix
        self.delimiter = delimiter
        self.transaction_suffix = transaction_suffix

    def data_change_topic(self, *parts: str) -> str:
        return sanitize_topic(self.delimiter.join((self.prefix, *parts)))

    def schema_change_topic(self) -> str:
        return self.prefix

    def transaction_topic(self) -> str:
        return f"{self.prefix}{self.delimiter}{self.transaction_suffix}"

    def heartbeat_topic(self) -> str:
        return f"{HEARTBEAT_TOPIC_PREFIX}{self.delimiter}{self.prefix}"

    @staticmethod
    def key_schema_name(topic: str) -> str:
        return f"{topic}.Key"

    @staticmethod
    def value_schema_name(topic: str) -> str:
        return f"{topic}.Value"

    @staticmethod
    def envelope_schema_name(topic: str) -> str:
        return f"{topic}.Envelope"
