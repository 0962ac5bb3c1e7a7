"""InsertHeader: add one header with a literal value to every record (Kafka's InsertHeader)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cdc.api.config import AbstractConfig, ConfigDef, ConfigType, Importance
from cdc.api.data.values import parse_string
from cdc.api.transforms import Transformation
from cdc.transforms._util import R, non_null

HEADER_FIELD = "header"
VALUE_LITERAL_FIELD = "value.literal"

CONFIG_DEF = (
    ConfigDef()
    .define(
        HEADER_FIELD,
        ConfigType.STRING,
        validator=non_null,
        importance=Importance.HIGH,
        documentation="The name of the header.",
    )
    .define(
        VALUE_LITERAL_FIELD,
        ConfigType.STRING,
        validator=non_null,
        importance=Importance.HIGH,
        documentation="The literal value that is to be set as the header value on all records.",
    )
)


class InsertHeader(Transformation[R]):
    """org.apache.kafka.connect.transforms.InsertHeader: append `header` (existing headers of that
    name stay) whose value is `value.literal` parsed as Kafka's `Values.parseString` does, so
    "1" becomes an INT8 1 and "true" a BOOLEAN."""

    def configure(self, configs: Mapping[str, Any]) -> None:
        config = AbstractConfig(CONFIG_DEF, configs)
        self._header = config.get_string(HEADER_FIELD) or ""
        self._literal = parse_string(config.get_string(VALUE_LITERAL_FIELD))

    def apply(self, record: R) -> R | None:
        headers = record.headers.duplicate().add(self._header, self._literal.value, self._literal.schema)
        return record.new_record(
            record.topic,
            record.kafka_partition,
            record.key_schema,
            record.key,
            record.value_schema,
            record.value,
            record.timestamp,
            headers,
        )

    def config(self) -> ConfigDef:
        return CONFIG_DEF
