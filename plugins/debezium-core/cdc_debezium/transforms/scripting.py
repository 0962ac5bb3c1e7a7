"""io.debezium.transforms.Filter and io.debezium.transforms.ContentBasedRouter, on a safe expression language.

Debezium's ScriptingTransformation evaluates a JSR-223 script (Groovy, JavaScript) per record. Here
the same keys take a `cdc.expr` expression (see `_expression`: the record is read, nothing else is
reachable, no Python `eval`):

- `language`: `cdc.expr` (also `expr`). Debezium's `jsr223.groovy`, `jsr223.graal.js`, any other
  `jsr223.*` or `wasm.*` is refused with a message saying to use `cdc.expr`;
- `condition` (Filter): records for which it is true are kept, the others dropped (Debezium's
  behaviour); it must give true or false (null counts as false);
- `topic.expression` (ContentBasedRouter): the new topic name, or null to keep the topic;
- `topic.regex`: only records of matching topics are evaluated (Java syntax, whole name);
- `null.handling.mode`: `keep` (the default) passes tombstones on, `drop` drops them, `evaluate`
  evaluates the expression with `value` null.

The Python classes are ExpressionFilter and ContentBasedRouter, so the short name `Filter` still
means Kafka's Filter; use the Debezium class name for this one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cdc.api import (
    NO_DEFAULT_VALUE,
    AbstractConfig,
    ConfigDef,
    ConfigType,
    DataException,
    Importance,
    Transformation,
)
from cdc_debezium.transforms._expression import Expression, ExpressionError
from cdc_debezium.transforms._java_regex import compile_java
from cdc_debezium.transforms._support import R, config_error

LANGUAGE = "language"
TOPIC_REGEX = "topic.regex"
NULL_HANDLING = "null.handling.mode"
CONDITION = "condition"
TOPIC_EXPRESSION = "topic.expression"
LANGUAGES = ("cdc.expr", "expr")
NULL_MODES = ("keep", "drop", "evaluate")


def _language(name: str, value: Any) -> None:
    if value is None or not str(value).strip():
        raise config_error(name, value, "must be set; use cdc.expr")
    lang = str(value).strip().lower()
    if lang in LANGUAGES:
        return
    if lang.startswith(("jsr223.", "wasm.")):
        raise config_error(
            name,
            value,
            f"{value} scripts (Groovy, JavaScript, WebAssembly) cannot run in this Python runtime; set "
            f"{name}=cdc.expr and write the expression in its safe syntax, e.g. "
            "value.op == 'u' && value.after.id > 2 (see cdc.expr in plugins/debezium-core/README.md)",
        )
    raise config_error(name, value, "unknown expression language; use cdc.expr")


def _null_mode(name: str, value: Any) -> None:
    if str(value).strip().lower() not in NULL_MODES:
        raise config_error(name, value, f"must be one of {', '.join(NULL_MODES)}")


def _regex(name: str, value: Any) -> None:
    if value is not None and str(value).strip():
        compile_java(name, str(value))


def _config_def(expression_key: str, documentation: str) -> ConfigDef:
    return (
        ConfigDef()
        .define(TOPIC_REGEX, ConfigType.STRING, None, _regex, Importance.LOW,
                "A regex (Java syntax) selecting the topics this transformation applies to.")
        .define(LANGUAGE, ConfigType.STRING, NO_DEFAULT_VALUE, _language, Importance.HIGH,
                "The expression language: cdc.expr (Debezium's jsr223.* and wasm.* languages are refused).")
        .define(expression_key, ConfigType.STRING, NO_DEFAULT_VALUE, None, Importance.HIGH, documentation)
        .define(NULL_HANDLING, ConfigType.STRING, "keep", _null_mode, Importance.LOW,
                "Records with a null value: keep (pass them on), drop, or evaluate the expression.")
    )  # fmt: skip


def bindings(record: Any) -> dict[str, Any]:
    """What an expression can read of a record (Debezium's Jsr223Engine bindings, plus partition)."""
    return {
        "key": record.key,
        "value": record.value,
        "keySchema": record.key_schema,
        "valueSchema": record.value_schema,
        "topic": record.topic,
        "header": {h.key: {"value": h.value, "schema": h.schema} for h in record.headers},
        "partition": record.kafka_partition,
        "timestamp": record.timestamp,
    }


class _Scripting(Transformation[R]):
    EXPRESSION_KEY = ""
    DOC = ""

    def configure(self, configs: Mapping[str, Any]) -> None:
        definition = _config_def(self.EXPRESSION_KEY, self.DOC)
        config = AbstractConfig(definition, configs)
        source = str(config.get_string(self.EXPRESSION_KEY) or "")
        try:
            self._expression = Expression.parse(source)
        except ExpressionError as e:
            raise config_error(self.EXPRESSION_KEY, source, f"Failed to parse expression: {e}") from e
        regex = (config.get_string(TOPIC_REGEX) or "").strip()
        self._topics = compile_java(TOPIC_REGEX, regex) if regex else None
        self._nulls = str(config.get_string(NULL_HANDLING)).strip().lower()

    def config(self) -> ConfigDef:
        return _config_def(self.EXPRESSION_KEY, self.DOC)

    def apply(self, record: R) -> R | None:
        if self._topics is not None and not self._topics.fullmatch(record.topic):
            return record
        if record.value is None and self._nulls != "evaluate":
            return record if self._nulls == "keep" else None
        try:
            result = self._expression.evaluate(bindings(record))
        except ExpressionError as e:
            raise DataException(
                f"{self.EXPRESSION_KEY} {self._expression.source!r} failed on a record of {record.topic}: {e}"
            ) from e
        return self._decide(record, result)

    def _decide(self, record: R, result: Any) -> R | None:
        raise NotImplementedError


class ExpressionFilter(_Scripting[R]):
    """io.debezium.transforms.Filter (with a cdc.expr `condition` instead of a script)"""

    EXPRESSION_KEY = CONDITION
    DOC = "An expression that is true for the records to keep; the others are dropped."

    def _decide(self, record: R, result: Any) -> R | None:
        if result is None or result is False:
            return None
        if result is True:
            return record
        raise DataException(
            f"{CONDITION} {self._expression.source!r} gave {result!r} on a record of {record.topic}, not true or false"
        )


class ContentBasedRouter(_Scripting[R]):
    """io.debezium.transforms.ContentBasedRouter (with a cdc.expr `topic.expression` instead of a script)"""

    EXPRESSION_KEY = TOPIC_EXPRESSION
    DOC = "An expression giving the record's new topic name; null keeps the topic."

    def _decide(self, record: R, result: Any) -> R | None:
        if result is None:
            return record
        if not isinstance(result, str) or not result:
            raise DataException(
                f"{TOPIC_EXPRESSION} {self._expression.source!r} gave {result!r} on a record of {record.topic}, "
                "not a topic name or null"
            )
        return record.new_record(
            result,
            record.kafka_partition,
            record.key_schema,
            record.key,
            record.value_schema,
            record.value,
            record.timestamp,
            record.headers,
        )
