"""RegexRouter: rename the topic with a Java regex and replacement (Kafka's RegexRouter)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cdc.api.config import AbstractConfig, ConfigDef, ConfigType, Importance
from cdc.api.transforms import Transformation
from cdc.transforms._java_regex import JavaRegexValidator, compile_java_regex, parse_java_replacement
from cdc.transforms._util import R, config_error

REGEX = "regex"
REPLACEMENT = "replacement"

CONFIG_DEF = (
    ConfigDef()
    .define(
        REGEX,
        ConfigType.STRING,
        validator=JavaRegexValidator(),
        importance=Importance.HIGH,
        documentation="Regular expression to use for matching.",
    )
    .define(REPLACEMENT, ConfigType.STRING, importance=Importance.HIGH, documentation="Replacement string.")
)


class RegexRouter(Transformation[R]):
    """If the whole topic matches `regex`, the topic becomes the first match replaced by `replacement`.

    Java semantics throughout: `Matcher.matches()` gates the rename, then `replaceFirst()`
    (which searches, so it can pick a shorter first match than the full one) builds it.
    """

    def configure(self, configs: Mapping[str, Any]) -> None:
        config = AbstractConfig(CONFIG_DEF, configs)
        self._regex = compile_java_regex(config.get_string(REGEX) or "")
        replacement = config.get_string(REPLACEMENT) or ""
        try:
            self._replacement = parse_java_replacement(replacement, self._regex)
        except ValueError as e:
            raise config_error(REPLACEMENT, replacement, str(e)) from None

    def apply(self, record: R) -> R | None:
        topic = record.topic
        if topic is None or self._regex.fullmatch(topic) is None:
            return record
        new_topic = self._regex.sub(self._replacement.expand, topic, count=1)
        return record.new_record(
            new_topic,
            record.kafka_partition,
            record.key_schema,
            record.key,
            record.value_schema,
            record.value,
            record.timestamp,
        )

    def config(self) -> ConfigDef:
        return CONFIG_DEF
