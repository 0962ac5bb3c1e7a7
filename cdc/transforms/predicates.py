"""The predicates Kafka Connect ships: TopicNameMatches, RecordIsTombstone, HasHeaderKey."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cdc.api.config import AbstractConfig, ConfigDef, ConfigType, NonEmptyString
from cdc.api.records import ConnectRecord
from cdc.api.transforms import Predicate
from cdc.transforms._java_regex import JavaRegexValidator, compile_java_regex

PATTERN = "pattern"
NAME = "name"


def _non_empty_java_regex(name: str, value: Any) -> None:
    NonEmptyString()(name, value)
    JavaRegexValidator()(name, value)


class TopicNameMatches(Predicate[ConnectRecord]):
    """True when the record's whole topic name matches `pattern` (Java `Matcher.matches()`)."""

    CONFIG_DEF = ConfigDef().define(
        PATTERN,
        ConfigType.STRING,
        validator=_non_empty_java_regex,
        documentation="A Java regular expression for matching against the name of a record's topic.",
    )

    def configure(self, configs: Mapping[str, Any]) -> None:
        self._pattern = compile_java_regex(AbstractConfig(self.CONFIG_DEF, configs).get_string(PATTERN) or "")

    def test(self, record: ConnectRecord) -> bool:
        return record.topic is not None and self._pattern.fullmatch(record.topic) is not None

    def config(self) -> ConfigDef:
        return self.CONFIG_DEF

    def __repr__(self) -> str:
        pattern = getattr(self, "_pattern", None)
        return f"TopicNameMatches{{pattern={pattern.pattern if pattern else None}}}"


class RecordIsTombstone(Predicate[ConnectRecord]):
    """True when the record's value is null (a delete marker for compacted topics)."""

    CONFIG_DEF = ConfigDef()

    def test(self, record: ConnectRecord) -> bool:
        return record.value is None

    def config(self) -> ConfigDef:
        return self.CONFIG_DEF

    def __repr__(self) -> str:
        return "RecordIsTombstone{}"


class HasHeaderKey(Predicate[ConnectRecord]):
    """True when the record has at least one header called `name`."""

    CONFIG_DEF = ConfigDef().define(
        NAME, ConfigType.STRING, validator=NonEmptyString(), documentation="The header name."
    )

    def configure(self, configs: Mapping[str, Any]) -> None:
        self._name = AbstractConfig(self.CONFIG_DEF, configs).get_string(NAME)

    def test(self, record: ConnectRecord) -> bool:
        return self._name in record.headers

    def config(self) -> ConfigDef:
        return self.CONFIG_DEF

    def __repr__(self) -> str:
        return f"HasHeaderKey{{name='{getattr(self, '_name', None)}'}}"
