"""Record headers (Kafka Connect's `Header` / `ConnectHeaders`): ordered, repeatable keys."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from cdc.api.data.schema import Schema


class Header(NamedTuple):
    """One header: a key, a Connect value and its schema (None: schemaless), as Kafka Connect's Header."""

    key: str
    value: Any
    schema: Schema | None = None


class Headers:
    """An ordered multi-map of headers; later entries with the same key win on `last_with_name`."""

    __slots__ = ("_items",)

    def __init__(self, items: Iterable[Header] | None = None) -> None:
        self._items: list[Header] = list(items) if items else []

    def add(self, key: str, value: Any, schema: Schema | None = None) -> Headers:
        """Append a header (keys may repeat); returns self for chaining."""
        self._items.append(Header(key, value, schema))
        return self

    def add_header(self, header: Header) -> Headers:
        """Append an existing Header; returns self for chaining."""
        self._items.append(header)
        return self

    def last_with_name(self, key: str) -> Header | None:
        """The last header called `key`, or None."""
        for h in reversed(self._items):
            if h.key == key:
                return h
        return None

    def all_with_name(self, key: str) -> list[Header]:
        """Every header called `key`, oldest first."""
        return [h for h in self._items if h.key == key]

    def remove(self, key: str) -> Headers:
        """Drop every header called `key`; returns self."""
        self._items = [h for h in self._items if h.key != key]
        return self

    def retain_latest(self) -> Headers:
        """Keep only the last header of each key, in their original order; returns self."""
        seen: set[str] = set()
        kept: list[Header] = []
        for h in reversed(self._items):
            if h.key not in seen:
                seen.add(h.key)
                kept.append(h)
        self._items = kept[::-1]
        return self

    def duplicate(self) -> Headers:
        """A copy that can be changed without changing this one (the Header values are shared)."""
        return Headers(self._items)

    def __contains__(self, key: object) -> bool:
        return any(h.key == key for h in self._items)

    def __iter__(self) -> Iterator[Header]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Headers) and self._items == other._items

    def __repr__(self) -> str:
        return f"Headers({self._items!r})"
