"""Topic names from Debezium's `topic.*` keys: SchemaTopicNamingStrategy (default) or DefaultTopicNamingStrategy.

SchemaTopicNamingStrategy joins `<topic.prefix>`, the schema and the table with `topic.delimiter`;
DefaultTopicNamingStrategy puts the delimiter only after the prefix (`<prefix><d><schema>.<table>`).
Both name the transaction topic `<prefix><d><topic.transaction>` and the heartbeat topic
`<topic.heartbeat.prefix><d><prefix>`. Names are sanitised as Debezium does (`[^a-zA-Z0-9._-]` → `_`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cdc_debezium.config import TOPIC_PREFIX
from cdc_debezium.naming import TopicNamingStrategy, sanitize_topic
from cdc_postgres import debezium_keys as keys


class PostgresTopicNaming(TopicNamingStrategy):
    def __init__(
        self,
        prefix: str,
        delimiter: str = ".",
        transaction: str = "transaction",
        heartbeat_prefix: str = "",
        schema_strategy: bool = True,
    ) -> None:
        super().__init__(prefix, delimiter, transaction)
        self.heartbeat_prefix = heartbeat_prefix or "__debezium-heartbeat"
        self.schema_strategy = schema_strategy

    @classmethod
    def from_config(cls, values: Mapping[str, Any]) -> PostgresTopicNaming:
        strategy = str(values.get(keys.TOPIC_NAMING) or keys.SCHEMA_NAMING).strip()
        return cls(
            values[TOPIC_PREFIX],
            values.get(keys.TOPIC_DELIMITER) or ".",
            values.get(keys.TOPIC_TRANSACTION) or "transaction",
            values.get(keys.HEARTBEAT_TOPICS_PREFIX) or values.get(keys.TOPIC_HEARTBEAT_PREFIX) or "",
            schema_strategy=strategy != keys.DEFAULT_NAMING,
        )

    def data_change_topic(self, *parts: str) -> str:
        if self.schema_strategy:
            return super().data_change_topic(*parts)
        return sanitize_topic(f"{self.prefix}{self.delimiter}{'.'.join(parts)}")

    def heartbeat_topic(self) -> str:
        return f"{self.heartbeat_prefix}{self.delimiter}{self.prefix}"
