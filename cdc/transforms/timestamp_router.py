"""TimestampRouter: rename the topic from the original topic and the record timestamp (Kafka's TimestampRouter)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cdc.api.config import AbstractConfig, ConfigDef, ConfigType, Importance
from cdc.api.errors import DataException
from cdc.api.transforms import Transformation
from cdc.transforms._java_date_format import JavaDateFormat
from cdc.transforms._util import R, config_error

TOPIC_FORMAT = "topic.format"
TIMESTAMP_FORMAT = "timestamp.format"

CONFIG_DEF = (
    ConfigDef()
    .define(
        TOPIC_FORMAT,
        ConfigType.STRING,
        "${topic}-${timestamp}",
        importance=Importance.HIGH,
        documentation="Format string which can contain <code>${topic}</code> and <code>${timestamp}</code> as "
        "placeholders for the topic and timestamp, respectively.",
    )
    .define(
        TIMESTAMP_FORMAT,
        ConfigType.STRING,
        "yyyyMMdd",
        importance=Importance.HIGH,
        documentation="Format string for the timestamp that is compatible with "
        "<code>java.text.SimpleDateFormat</code>.",
    )
)


class TimestampRouter(Transformation[R]):
    """org.apache.kafka.connect.transforms.TimestampRouter: `${topic}` and `${timestamp}` in
    `topic.format` are replaced by the topic and the record timestamp formatted in UTC with the
    SimpleDateFormat pattern `timestamp.format`; a record without a timestamp is an error."""

    def configure(self, configs: Mapping[str, Any]) -> None:
        config = AbstractConfig(CONFIG_DEF, configs)
        self._topic_format = config.get_string(TOPIC_FORMAT) or ""
        pattern = config.get_string(TIMESTAMP_FORMAT) or ""
        try:
            self._timestamp_format = JavaDateFormat(pattern)
        except ValueError as e:
            raise config_error(TIMESTAMP_FORMAT, pattern, f"{e}; use a java.text.SimpleDateFormat pattern") from None

    def apply(self, record: R) -> R | None:
        if record.timestamp is None:
            raise DataException(f"Timestamp missing on record: {record!r}")
        formatted = self._timestamp_format.format(record.timestamp)
        topic = self._topic_format.replace("${topic}", record.topic).replace("${timestamp}", formatted)
        return record.new_record(
            topic,
            record.kafka_partition,
            record.key_schema,
            record.key,
            record.value_schema,
            record.value,
            record.timestamp,
        )

    def config(self) -> ConfigDef:
        return CONFIG_DEF
