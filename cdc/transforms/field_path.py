"""Nested field paths for SMTs (Kafka's `transforms.field` package: FieldSyntaxVersion, SingleFieldPath).

`field.syntax.version=V1` (the default) treats a configured field name literally; `V2` reads
`a.b.c` as a path into nested structs/maps, with backticks around names that contain dots
(`` `foo.bar`.baz ``) and a backslash before a backtick that belongs to the name.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import Any

from cdc.api.config import AbstractConfig, ConfigDef, ConfigType, Importance, ValidString
from cdc.api.data import Field, Schema, Struct
from cdc.api.errors import ConfigException
from cdc.transforms._util import require_map, require_struct

FIELD_SYNTAX_VERSION_CONFIG = "field.syntax.version"
FIELD_SYNTAX_VERSION_DOC = (
    "Defines the version of the syntax to access fields. If set to `V1`, then the field paths are limited to "
    "access the elements at the root level of the struct or map. If set to `V2`, the syntax will support "
    "accessing nested elements. To access nested elements, dotted notation is used. If dots are already "
    "included in the field name, then backtick pairs can be used to wrap field names containing dots. E.g. to "
    'access the subfield `baz` from a field named "foo.bar" in a struct/map the following format can be used '
    'to access its elements: "`foo.bar`.baz".'
)
_NESTED = "nested field access"


class FieldSyntaxVersion(Enum):
    V1 = "V1"
    V2 = "V2"

    @staticmethod
    def append_config_to(config_def: ConfigDef) -> ConfigDef:
        return config_def.define(
            FIELD_SYNTAX_VERSION_CONFIG,
            ConfigType.STRING,
            FieldSyntaxVersion.V1.value,
            validator=ValidString.in_ignore_case("V1", "V2"),
            importance=Importance.HIGH,
            documentation=FIELD_SYNTAX_VERSION_DOC,
        )

    @staticmethod
    def from_config(config: AbstractConfig) -> FieldSyntaxVersion:
        raw = config.get_string(FIELD_SYNTAX_VERSION_CONFIG) or ""
        try:
            return FieldSyntaxVersion(raw.upper())
        except ValueError:
            raise ConfigException(
                f"Invalid value {raw} for configuration {FIELD_SYNTAX_VERSION_CONFIG}: "
                "Unrecognized field syntax version",
                FIELD_SYNTAX_VERSION_CONFIG,
                raw,
            ) from None


def _incomplete_backtick(path: str, at: int) -> ConfigException:
    return ConfigException(
        f"Incomplete backtick pair in path: [{path}], consider adding a backslash before backtick at position "
        f"{at} to escape it"
    )


def parse_v2(path: str) -> list[str]:
    """The steps of a V2 path; a backtick only quotes when it opens a step and closes one (before a dot or the end)."""
    steps: list[str] = []
    i, n = 0, len(path)
    while i < n:
        if path[i] != "`":
            dot = path.find(".", i)
            if dot < 0:
                steps.append(path[i:])
                break
            steps.append(path[i:dot])
            i = dot + 1
            continue
        opened_at = i
        i += 1
        start = i
        name = ""
        while True:
            tick = path.find("`", i)
            if tick < 0:
                raise _incomplete_backtick(path, opened_at)
            escaped = path[tick - 1] == "\\"
            if tick >= n - 1:  # the closing backtick ends the path
                if escaped:
                    raise _incomplete_backtick(path, opened_at)
                steps.append(name + path[start:tick])
                i = tick + 1
                break
            if path[tick + 1] != ".":  # a backtick inside the name
                i = tick + 1
                continue
            if escaped:  # \` before a dot is a literal backtick; the name goes on
                name += path[start : tick - 1] + "`"
                i = start = tick + 1
                continue
            steps.append(name + path[start:tick])
            i = tick + 2
            break
    if path.endswith("."):
        steps.append("")
    return steps


class SingleFieldPath:
    """One field addressed by a (possibly nested) path, read from a schema, a Struct or a map."""

    def __init__(self, path: str, version: FieldSyntaxVersion) -> None:
        self.version = version
        self.steps: tuple[str, ...] = (path,) if version is FieldSyntaxVersion.V1 else tuple(parse_v2(path))

    def field_from(self, schema: Schema | None) -> Field | None:
        if schema is None:
            return None
        current = schema
        for step in self.steps[:-1]:
            found = current.field(step)
            if found is None:
                return None
            current = found.schema
        return current.field(self.steps[-1])

    def value_from_struct(self, struct: Struct | None, with_default: bool = True) -> Any:
        current = struct
        for step in self.steps[:-1]:
            if current is None or current.schema.field(step) is None:
                return None
            nested = current.get(step)
            current = None if nested is None else require_struct(nested, _NESTED)
        if current is None or current.schema.field(self.steps[-1]) is None:
            return None
        last = self.steps[-1]
        return current.get(last) if with_default else current.get_without_default(last)

    def value_from_map(self, value: Mapping[str, Any] | None) -> Any:
        current = value
        for step in self.steps[:-1]:
            if current is None:
                return None
            nested = current.get(step)
            current = None if nested is None else require_map(nested, _NESTED)
        return None if current is None else current.get(self.steps[-1])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SingleFieldPath) and self.steps == other.steps

    def __hash__(self) -> int:
        return hash(self.steps)

    def __repr__(self) -> str:
        return f"SingleFieldPath{{version={self.version.value}, path={'.'.join(self.steps)}}}"
