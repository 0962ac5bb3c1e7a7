"""DropHeaders: remove every header whose key is listed (Kafka's DropHeaders)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cdc.api.config import AbstractConfig, ConfigDef, ConfigType, Importance
from cdc.api.header import Headers
from cdc.api.transforms import Transformation
from cdc.transforms._util import R, non_empty_list

HEADERS_FIELD = "headers"

CONFIG_DEF = ConfigDef().define(
    HEADERS_FIELD,
    ConfigType.LIST,
    validator=non_empty_list,
    importance=Importance.HIGH,
    documentation="The name of the headers to be removed.",
)


class DropHeaders(Transformation[R]):
    """org.apache.kafka.connect.transforms.DropHeaders: every header named in `headers` goes,
    all its values included; the other headers keep their order."""

    def configure(self, configs: Mapping[str, Any]) -> None:
        config = AbstractConfig(CONFIG_DEF, configs)
        self._headers = frozenset(config.get_list(HEADERS_FIELD) or ())

    def apply(self, record: R) -> R | None:
        kept = Headers(h for h in record.headers if h.key not in self._headers)
        return record.new_record(
            record.topic,
            record.kafka_partition,
            record.key_schema,
            record.key,
            record.value_schema,
            record.value,
            record.timestamp,
            kept,
        )

    def config(self) -> ConfigDef:
        return CONFIG_DEF
