"""ReplaceField$Key / ReplaceField$Value: drop, keep or rename top-level fields."""

from __future__ import annotations

import logging
from abc import ABC
from collections.abc import Mapping
from typing import Any

from cdc.api.config import AbstractConfig, ConfigDef, ConfigType, Importance
from cdc.api.data import Schema, SchemaBuilder, Struct
from cdc.api.transforms import Transformation
from cdc.transforms._util import (
    KeySide,
    OperatingSide,
    R,
    SchemaUpdateCache,
    ValueSide,
    config_error,
    copy_schema_basics,
    put_present,
    require_map,
    require_struct,
)

log = logging.getLogger(__name__)

EXCLUDE = "exclude"
INCLUDE = "include"
RENAMES = "renames"
REPLACE_NULL_WITH_DEFAULT = "replace.null.with.default"
# Pre-3.0 names, still accepted by Kafka 3.x (KIP-629) and by configs written for it.
DEPRECATED_ALIASES = {EXCLUDE: "blacklist", INCLUDE: "whitelist"}
PURPOSE = "field replacement"


def parse_renames(mappings: list[str] | None, name: str = RENAMES) -> dict[str, str]:
    """`old:new` pairs; anything else is a config error naming `renames`."""
    result: dict[str, str] = {}
    for mapping in mappings or []:
        parts = mapping.split(":")
        if len(parts) != 2 or not parts[0] or not parts[1]:
            raise config_error(
                name, mappings, f"Invalid rename mapping: {mapping}; expected old:new pairs such as foo:bar,abc:xyz"
            )
        result[parts[0]] = parts[1]
    return result


def _renames_validator(name: str, value: Any) -> None:
    parse_renames(value, name)


CONFIG_DEF = (
    ConfigDef()
    .define(
        EXCLUDE,
        ConfigType.LIST,
        [],
        documentation="Fields to exclude. This takes precedence over the fields to include.",
    )
    .define(
        DEPRECATED_ALIASES[EXCLUDE],
        ConfigType.LIST,
        None,
        importance=Importance.LOW,
        documentation="Deprecated. Use exclude instead.",
    )
    .define(
        INCLUDE, ConfigType.LIST, [], documentation="Fields to include. If specified, only these fields will be used."
    )
    .define(
        DEPRECATED_ALIASES[INCLUDE],
        ConfigType.LIST,
        None,
        importance=Importance.LOW,
        documentation="Deprecated. Use include instead.",
    )
    .define(
        RENAMES,
        ConfigType.LIST,
        [],
        validator=_renames_validator,
        documentation="Field rename mappings, a list of colon-delimited pairs, e.g. <code>foo:bar,abc:xyz</code>.",
    )
    .define(
        REPLACE_NULL_WITH_DEFAULT,
        ConfigType.BOOLEAN,
        True,
        documentation="Whether to replace fields that have a default value and that are null to the default "
        "value. When set to true, the default value is used, otherwise null is used.",
    )
)


def translate_deprecated(configs: Mapping[str, Any]) -> dict[str, Any]:
    """Map `blacklist`/`whitelist` onto `exclude`/`include`; the new name wins when both are set."""
    out = dict(configs)
    for target, alias in DEPRECATED_ALIASES.items():
        if alias not in out:
            continue
        if target in out:
            log.warning("Both %s and its deprecated alias %s are set; using %s", target, alias, target)
        else:
            log.warning("Configuration key %s is deprecated; use %s instead", alias, target)
            out[target] = out[alias]
        del out[alias]
    return out


class ReplaceField(OperatingSide, Transformation[R], ABC):
    """Filter (`exclude` wins over `include`) and rename (`renames`) the fields of a Struct or map."""

    def configure(self, configs: Mapping[str, Any]) -> None:
        config = AbstractConfig(CONFIG_DEF, translate_deprecated(configs))
        self._exclude = frozenset(config.get_list(EXCLUDE) or [])
        self._include = frozenset(config.get_list(INCLUDE) or [])
        self._renames = parse_renames(config.get_list(RENAMES))
        self._reverse = {new: old for old, new in self._renames.items()}
        self._replace_null_with_default = bool(config.get_boolean(REPLACE_NULL_WITH_DEFAULT))
        self._cache = SchemaUpdateCache(16)

    def keeps(self, field_name: str) -> bool:
        return field_name not in self._exclude and (not self._include or field_name in self._include)

    def renamed(self, field_name: str) -> str:
        return self._renames.get(field_name, field_name)

    def apply(self, record: R) -> R | None:
        if self.operating_value(record) is None:
            return record
        if self.operating_schema(record) is None:
            value = require_map(self.operating_value(record), PURPOSE)
            updated = {self.renamed(k): v for k, v in value.items() if self.keeps(k)}
            return self.new_record(record, None, updated)
        return self._apply_with_schema(record)

    def _apply_with_schema(self, record: R) -> R:
        value = require_struct(self.operating_value(record), PURPOSE)
        schema = self._cache.get(value.schema)
        if schema is None:
            schema = self._updated_schema(value.schema)
            self._cache.put(value.schema, schema)
        updated = Struct(schema)
        for field in schema.fields:
            source = self._reverse.get(field.name, field.name)
            original = value.get(source) if self._replace_null_with_default else value.get_without_default(source)
            put_present(updated, field.name, original)
        return self.new_record(record, schema, updated)

    def _updated_schema(self, schema: Schema) -> Schema:
        builder = copy_schema_basics(schema, SchemaBuilder.struct())
        for field in schema.fields:
            if self.keeps(field.name):
                builder.field(self.renamed(field.name), field.schema)
        return builder.build()

    def config(self) -> ConfigDef:
        return CONFIG_DEF

    def close(self) -> None:
        self._cache = SchemaUpdateCache(16)


class ReplaceFieldKey(KeySide, ReplaceField[R]):
    """org.apache.kafka.connect.transforms.ReplaceField$Key"""


class ReplaceFieldValue(ValueSide, ReplaceField[R]):
    """org.apache.kafka.connect.transforms.ReplaceField$Value"""
