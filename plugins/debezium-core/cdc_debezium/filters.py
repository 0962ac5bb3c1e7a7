"""Include/exclude lists (anchored, case-insensitive regexes) and column masking/truncation.

Debezium matches `database.include.list` against `db`, `table.include.list` against
`db.table` and `column.*.list` against `db.table.column`, each regex anchored at both ends.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from cdc.api import ConfigException


def compile_list(name: str, patterns: Iterable[str] | None) -> list[re.Pattern[str]]:
    out: list[re.Pattern[str]] = []
    for p in patterns or []:
        if not p:
            continue
        try:
            out.append(re.compile(p, re.IGNORECASE))
        except re.error as e:
            raise ConfigException(f"{name}: {p!r} is not a valid regular expression ({e})", name, p) from e
    return out


class IncludeExclude:
    """A predicate from an include list or an exclude list (never both, as in Debezium)."""

    def __init__(self, include: list[re.Pattern[str]], exclude: list[re.Pattern[str]]) -> None:
        self.include = include
        self.exclude = exclude

    def __call__(self, name: str) -> bool:
        if self.include:
            return any(p.fullmatch(name) for p in self.include)
        return not any(p.fullmatch(name) for p in self.exclude)


def include_exclude(props: Mapping[str, Any], include_key: str, exclude_key: str) -> IncludeExclude:
    inc = compile_list(include_key, props.get(include_key))
    exc = compile_list(exclude_key, props.get(exclude_key))
    if inc and exc:
        raise ConfigException(
            f"{include_key} and {exclude_key} are mutually exclusive: set only one of them", include_key
        )
    return IncludeExclude(inc, exc)


_MASK = re.compile(r"^column\.mask\.with\.(\d+)\.chars$")
_TRUNCATE = re.compile(r"^column\.truncate\.to\.(\d+)\.chars$")

ColumnMapper = Callable[[Any], Any]


def _masker(n: int) -> ColumnMapper:
    mask = "*" * n

    # Every value, null included, becomes the mask, as Debezium's MaskStrings.MaskingValueConverter does.
    def apply(_value: Any) -> Any:
        return mask

    return apply


def _truncator(n: int) -> ColumnMapper:
    def apply(value: Any) -> Any:
        return value[:n] if isinstance(value, str) and len(value) > n else value

    return apply


class ColumnMappers:
    """`column.mask.with.N.chars` and `column.truncate.to.N.chars`, by fully-qualified column name."""

    def __init__(self, rules: list[tuple[list[re.Pattern[str]], ColumnMapper]]) -> None:
        self.rules = rules

    @classmethod
    def from_config(cls, props: Mapping[str, str]) -> ColumnMappers:
        rules: list[tuple[list[re.Pattern[str]], ColumnMapper]] = []
        for key, raw in props.items():
            if m := _MASK.match(key):
                mapper = _masker(int(m.group(1)))
            elif m := _TRUNCATE.match(key):
                mapper = _truncator(int(m.group(1)))
            else:
                continue
            patterns = compile_list(key, [p.strip() for p in str(raw).split(",")])
            rules.append((patterns, mapper))
        return cls(rules)

    def mapper_for(self, column_id: str) -> ColumnMapper | None:
        """The mapper for `db.table.column`, or None; masking means the schema becomes a string."""
        for patterns, mapper in self.rules:
            if any(p.fullmatch(column_id) for p in patterns):
                return mapper
        return None

    def is_mask(self, column_id: str) -> bool:
        for patterns, mapper in self.rules:
            if any(p.fullmatch(column_id) for p in patterns):
                return mapper.__name__ == "apply" and mapper.__qualname__.startswith("_masker")
        return False
