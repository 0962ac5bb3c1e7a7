"""A model of AUTO CDC's `ignore_null_updates`, and random histories to hold the sink to it.

The model applies a key's events in sequence order: an insert (or snapshot read) sets the whole
row, NULLs included; an update sets each column it carries a value for and keeps the others;
a delete removes the row, so a later update starts from nothing. The sink must end equal to
it whatever the micro-batches, as long as each key's events arrive in sequence order (one
topic partition per key, as Kafka delivers them).
"""

from __future__ import annotations

import itertools
import random
from typing import Any

from tests.spark.events import Table

COLUMNS = ("name", "qty")
Event = tuple[int, int, str, dict[str, Any]]  # (seq, key, op, values of COLUMNS; None: NULL)


def model(events: list[Event]) -> dict[int, tuple[Any, ...]]:
    """key → (name, qty) of the rows that exist after every event, applied in sequence order."""
    state: dict[int, dict[str, Any]] = {}
    for _, key, op, values in sorted(events, key=lambda e: e[0]):
        row = _after(state.get(key), op, values)
        if row is None:
            state.pop(key, None)
        else:
            state[key] = row
    return {k: tuple(row.get(c) for c in COLUMNS) for k, row in state.items()}


def history(rng: random.Random, n: int, keys: int = 4) -> list[Event]:
    """`n` events over `keys` keys, seq 1..n: inserts, updates that leave columns NULL, deletes
    (an insert after a delete or at a key's start, as a database writes them)."""
    events: list[Event] = []
    live: dict[int, bool] = {}
    for seq in range(1, n + 1):
        key = rng.randint(1, keys)
        # A key without a row is inserted (or, sometimes, updated: a row the target never had).
        op = rng.choice("uuuud") if live.get(key) else ("c" if rng.random() < 0.85 else "u")
        values = {"name": f"n{seq}" if rng.random() < 0.6 else None, "qty": seq if rng.random() < 0.6 else None}
        if op == "d":
            values = {"name": None, "qty": None}
        events.append((seq, key, op, values))
        live[key] = op != "d"
    return events


def splits(rng: random.Random, events: list[Event], parts: int) -> list[list[Event]]:
    """`events` in order, cut into up to `parts` consecutive micro-batches (none empty)."""
    cuts = sorted(rng.sample(range(1, len(events)), min(parts - 1, len(events) - 1)))
    bounds = [0, *cuts, len(events)]
    return [events[a:b] for a, b in itertools.pairwise(bounds) if b > a]


def shuffled_within(rng: random.Random, batch: list[Event]) -> list[Event]:
    """The batch's events in another order: within a micro-batch the sequence decides, not the offset."""
    out = list(batch)
    rng.shuffle(out)
    return out


def encode(table: Table, batch: list[Event]) -> list[tuple[bytes | None, bytes]]:
    """The events as Debezium records of `table` (the MySQL shape: binlog pos = seq)."""
    return [table.event(op, key, values, seq) for seq, key, op, values in batch]


Version = tuple[int, int, int | None, tuple[Any, ...] | None]  # (key, valid_from, valid_to, row; None: deleted)


def scd2_model(events: list[Event], tracked: tuple[str, ...]) -> list[Version]:
    """The SCD2 history of `events` (in sequence order, NULLs of updates kept as in `model`) when
    only `tracked` columns open a version: an event agreeing with the live current version on
    them updates it in place; a delete is a version of its own."""
    chains: dict[int, list[list[Any]]] = {}
    state: dict[int, dict[str, Any]] = {}
    for seq, key, op, values in sorted(events, key=lambda e: e[0]):
        chain = chains.setdefault(key, [])
        row = _after(state.get(key), op, values)
        if row is None:
            state.pop(key, None)
        else:
            state[key] = row
        current = chain[-1][1] if chain else None
        if row is not None and current is not None and all(current[c] == row[c] for c in tracked):
            chain[-1][1] = row  # in place: the version keeps its start
        else:
            chain.append([seq, row])
    out: list[Version] = []
    for key, chain in chains.items():
        for i, (start, row) in enumerate(chain):
            end = chain[i + 1][0] if i + 1 < len(chain) else None
            out.append((key, start, end, None if row is None else tuple(row[c] for c in COLUMNS)))
    return sorted(out, key=lambda v: (v[0], v[1]))


def _after(before: dict[str, Any] | None, op: str, values: dict[str, Any]) -> dict[str, Any] | None:
    """A key's row after one event (None: deleted), NULLs of an update keeping `before`'s values."""
    if op == "d":
        return None
    if op in ("c", "r"):
        return dict(values)
    return {c: values[c] if values[c] is not None else (before or {}).get(c) for c in COLUMNS}
