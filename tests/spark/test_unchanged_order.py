"""A value the source did not send comes from the newest source by sequence (issue 16).

An update that leaves a column unsent carries Debezium's placeholder there; the value it
stands for is the key's previous one. In a micro-batch that also holds a late, older event
of the key, "previous" is by `__seq`: the stored row wins over an in-batch event older than
it, an in-batch event newer than the stored row wins over it, and a delete (in the batch, or
the stored row's own: a tombstone, a soft-deleted row) ends the search only where it is the
newest. The sink used to take the late event's older value whenever the batch had one.

Seeded random histories per key: a stored state at some sequence (a row, a delete, or
nothing), then one batch with a random mix of late older events, replays, deletes,
re-creates and newer updates carrying the placeholder in random columns, spread over
partitions. A model computes each key's row by sequence; every target must equal it, read
with the target's own library. Set CDC_TEST_SEED to replay another seed.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from functools import reduce
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from cdc.api.data import Schema
from cdc_spark.apply import ChangeApplier
from cdc_spark.apply.latest import latest_and_earlier
from cdc_spark.apply.unchanged import fill_from_stored, flatten_latest
from cdc_spark.decode.events import decode_batches
from cdc_spark.decode.unavailable import DEFAULT as P
from cdc_spark.decode.unavailable import Placeholder
from cdc_spark.source.reader import ARROW_SCHEMA
from tests.spark.events import Table
from tests.spark.helpers import delta_rows, iceberg_rows, postgres_rows, raw_frame

SEED = int(os.environ.get("CDC_TEST_SEED", "1616"))
TOPIC = "pg.public.notes"
TABLE = "pg_public_notes"
COLUMNS = {
    "id": Schema.INT32_SCHEMA,
    "name": Schema.OPTIONAL_STRING_SCHEMA,
    "body": Schema.OPTIONAL_STRING_SCHEMA,
    "blob": Schema.OPTIONAL_BYTES_SCHEMA,
    "qty": Schema.OPTIONAL_INT64_SCHEMA,
}
UNSENDABLE = ("name", "body", "blob")  # the columns an update may leave out
VALUES = ("name", "body", "blob", "qty")
PLACEHOLDER: dict[str, Any] = {"name": P, "body": P, "blob": P.encode()}
PARTITIONS = 3
KEYS = 60
TARGETS = ["delta", "delta-soft", "scd2", "iceberg", "iceberg-soft", "postgres", "postgres-soft"]


@dataclass(frozen=True)
class Event:
    op: str  # c, u, d
    seq: int
    row: dict[str, Any] | None  # None for deletes


@dataclass(frozen=True)
class State:
    """What the target holds for a key: a row, or a delete it remembers, at a sequence."""

    seq: int
    deleted: bool
    row: dict[str, Any] | None


def _unsent(row: dict[str, Any] | None, column: str) -> bool:
    return row is not None and column in PLACEHOLDER and row[column] == PLACEHOLDER[column]


def apply_model(state: State | None, batch: list[Event]) -> State | None:
    """The key's state after one batch: its latest event wins if newer than the stored state;
    each value it left unsent comes from the newest, by sequence, of its earlier events in the
    batch that carry the value or delete the row, and the stored state. A delete there (or no
    source at all) leaves the placeholder."""
    if not batch:
        return state
    winner = max(batch, key=lambda e: e.seq)  # equal sequences are exact replays here
    if state is not None and winner.seq <= state.seq:
        return state
    if winner.op == "d":
        return State(winner.seq, True, None)
    assert winner.row is not None
    row = dict(winner.row)
    for column in UNSENDABLE:
        if not _unsent(winner.row, column):
            continue
        earlier = [e for e in batch if e.seq < winner.seq and (e.op == "d" or not _unsent(e.row, column))]
        best = max(earlier, key=lambda e: e.seq) if earlier else None
        if state is not None and (best is None or state.seq >= best.seq):
            row[column] = PLACEHOLDER[column] if state.deleted or state.row is None else state.row[column]
        elif best is not None and best.row is not None and best.op != "d":
            row[column] = best.row[column]
    return State(winner.seq, False, row)


def history_model(events: list[Event]) -> list[tuple[int, bool, dict[str, Any] | None]]:
    """SCD2: every distinct event is a version; an unsent value is the previous version's
    (none after a delete or before the first version)."""
    out: list[tuple[int, bool, dict[str, Any] | None]] = []
    for e in sorted({e.seq: e for e in events}.values(), key=lambda e: e.seq):
        if e.op == "d" or e.row is None:
            out.append((e.seq, True, None))
            continue
        row = dict(e.row)
        previous = out[-1] if out else None
        for column in UNSENDABLE:
            if _unsent(e.row, column) and previous is not None and not previous[1] and previous[2] is not None:
                row[column] = previous[2][column]
        out.append((e.seq, False, row))
    return out


def _value(rng: random.Random, column: str, key: int, seq: int) -> Any:
    """A value naming its key and event, so a value taken from the wrong event shows."""
    if rng.random() < 0.1:
        return None
    if column == "qty":
        return key * 10_000 + seq
    text = f"{column}-{key}-{seq}"
    return text.encode() if column == "blob" else text


def _full(rng: random.Random, key: int, seq: int) -> dict[str, Any]:
    return {c: _value(rng, c, key, seq) for c in VALUES}


def _update(rng: random.Random, key: int, seq: int, at_least_one: bool) -> dict[str, Any]:
    row = _full(rng, key, seq)
    unsent = [c for c in UNSENDABLE if rng.random() < 0.5]
    if at_least_one and not unsent:
        unsent = [rng.choice(UNSENDABLE)]
    row.update({c: PLACEHOLDER[c] for c in unsent})
    return row


@dataclass
class History:
    first: list[Event]  # the batch that makes the stored state
    second: list[Event]  # the batch under test


def random_history(rng: random.Random, key: int) -> History:
    used: set[int] = set()

    def fresh(lo: int, hi: int) -> int:
        while True:
            seq = rng.randint(lo, hi)
            if seq not in used:
                used.add(seq)
                return seq

    stored = fresh(300, 700)
    kind = rng.choices(["row", "deleted", "none"], [6, 2, 2])[0]
    first: list[Event] = []
    if kind == "row":
        first = [Event("c", stored, _full(rng, key, stored))]
    elif kind == "deleted":
        born = fresh(1, stored - 1)
        first = [Event("c", born, _full(rng, key, born)), Event("d", stored, None)]
    second: list[Event] = []
    for _ in range(rng.randint(1, 6)):
        seq = fresh(1, stored - 1) if rng.random() < 0.5 else fresh(stored + 1, 999)
        op = rng.choices(["u", "c", "d"], [6, 2, 2])[0]
        row = None if op == "d" else (_update(rng, key, seq, False) if op == "u" else _full(rng, key, seq))
        second.append(Event(op, seq, row))
    newest = max(second, key=lambda e: e.seq)
    if rng.random() < 0.85 and not any(_unsent(newest.row, c) for c in UNSENDABLE):
        second[second.index(newest)] = Event("u", newest.seq, _update(rng, key, newest.seq, True))
    if first and rng.random() < 0.3:
        second.append(first[-1])  # a replay of what the target already holds
    if rng.random() < 0.2:
        second.append(rng.choice(second))  # a replay within the batch
    rng.shuffle(second)
    return History(first, second)


def fixed_histories() -> dict[int, History]:
    """The cases of the report, always present."""

    def upd(seq: int, **row: Any) -> Event:
        return Event("u", seq, {"name": None, "body": None, "blob": None, "qty": seq, **row})

    stored = [Event("c", 50, {"name": "new", "body": "b-new", "blob": b"new", "qty": 50})]
    return {
        # A late replayed event older than the stored row: the stored row's value.
        1001: History(stored, [upd(30, name="stale", body="b-stale", blob=b"stale"), upd(60, name=P, body=P)]),
        # A late delete older than the stored row does not end the search.
        1002: History(stored, [upd(20, name="old"), Event("d", 30, None), upd(60, name=P, blob=P.encode())]),
        # An event newer than the stored row wins over it.
        1003: History(stored, [upd(30, name="stale"), upd(55, name="newer", body="b-newer"), upd(60, name=P)]),
        # A delete newer than the stored row ends it: nothing to keep.
        1004: History(stored, [upd(30, name="stale"), Event("d", 55, None), upd(60, name=P)]),
        # A stored delete newer than the batch's older events ends it too.
        1005: History([*stored, Event("d", 52, None)], [upd(30, name="stale"), upd(60, name=P)]),
    }


def histories(seed: int) -> dict[int, History]:
    rng = random.Random(seed)
    out = {key: random_history(rng, key) for key in range(1, KEYS + 1)}
    out.update(fixed_histories())
    return out


def expected_rows(all_: dict[int, History]) -> dict[int, tuple]:
    out = {}
    for key, h in all_.items():
        state = apply_model(apply_model(None, h.first), h.second)
        if state is not None and not state.deleted and state.row is not None:
            out[key] = tuple(state.row[c] for c in VALUES)
    return out


def _sink(kind: str, tmp_path: Path, postgres: Any) -> dict[str, Any]:
    soft = {"delete.mode": "soft"} if kind.endswith("-soft") else {}
    base = kind.removesuffix("-soft")
    if base == "delta":
        return {"target": "delta", "path": str(tmp_path / "lake"), **soft}
    if base == "scd2":
        return {"target": "delta", "path": str(tmp_path / "lake"), "mode": "scd2"}
    if base == "postgres":
        return {"target": "postgres", "dsn": postgres.dsn, **soft}
    (tmp_path / "wh").mkdir()
    catalog = {"uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}/wh"}
    return {"target": "iceberg", "catalog": catalog, "namespace": "lake", **soft}


def _read(kind: str, sink: dict[str, Any]) -> list[dict[str, Any]]:
    if kind.startswith("postgres"):
        return postgres_rows(sink["dsn"], TABLE)
    if kind.startswith("iceberg"):
        return iceberg_rows(sink["catalog"], "lake", TABLE)
    return delta_rows(f"{sink['path']}/{TABLE}")


def _cells(r: dict[str, Any]) -> tuple:
    return tuple(bytes(r[c]) if c == "blob" and r[c] is not None else r[c] for c in VALUES)


def _visible(rows: list[dict[str, Any]]) -> dict[int, tuple]:
    """id → values of the rows a reader sees (soft deletes and closed versions left out)."""
    return {r["id"]: _cells(r) for r in rows if not r.get("__deleted") and r.get("__valid_to", None) is None}


def _frame(spark: Any, t: Table, rng: random.Random, events: list[tuple[int, Event]]) -> Any:
    """One batch: each event in a random partition, each partition its own Spark partitions."""
    parts: dict[int, list[tuple[bytes | None, bytes | None]]] = {p: [] for p in range(PARTITIONS)}
    for key, e in events:
        parts[rng.randrange(PARTITIONS)].append(t.event(e.op, key, e.row, e.seq))
    frames = [raw_frame(spark, TOPIC, recs, partition=p) for p, recs in parts.items() if recs]
    return reduce(lambda a, b: a.unionByName(b), frames)


def _describe(key: int, h: History) -> str:
    def show(events: list[Event]) -> str:
        return ", ".join(f"{e.op}@{e.seq}{'' if e.row is None else e.row}" for e in sorted(events, key=lambda e: e.seq))

    return f"key {key}: stored from [{show(h.first)}]; batch [{show(h.second)}]"


@pytest.mark.parametrize("kind", TARGETS)
def test_an_unsent_value_comes_from_the_newest_source_by_sequence(
    spark: Any, tmp_path: Path, postgres_db: Any, kind: str
) -> None:
    seed = SEED + TARGETS.index(kind)
    all_ = histories(seed)
    rng = random.Random(seed * 7919)
    t = Table(TOPIC, COLUMNS)
    sink = _sink(kind, tmp_path, postgres_db)
    applier = ChangeApplier(sink)
    first = [(key, e) for key, h in all_.items() for e in h.first]
    second = [(key, e) for key, h in all_.items() for e in h.second]
    rng.shuffle(second)
    applier(_frame(spark, t, rng, first), 0)
    applier(_frame(spark, t, rng, second), 1)
    rows = _read(kind, sink)
    got = _visible(rows)
    want = expected_rows(all_)
    wrong = sorted(k for k in set(got) | set(want) if got.get(k) != want.get(k))
    assert not wrong, (
        f"seed {seed} ({kind}, CDC_TEST_SEED={SEED}): {len(wrong)} key(s) differ; first: "
        f"{_describe(wrong[0], all_[wrong[0]])}: got {got.get(wrong[0])}, want {want.get(wrong[0])}"
    )
    if kind == "scd2":  # every version, not only the current one
        for key, h in all_.items():
            versions = sorted((r for r in rows if r["id"] == key), key=lambda r: r["__valid_from"])
            got_h = [(r["__deleted"], None if r["__deleted"] else _cells(r)) for r in versions]
            want_h = [
                (d, None if d or row is None else tuple(row[c] for c in VALUES))
                for _, d, row in history_model(h.first + h.second)
            ]
            assert got_h == want_h, f"seed {seed} (scd2): {_describe(key, h)}: history {got_h}, want {want_h}"


def test_the_model_follows_the_cases_of_the_report() -> None:
    """The model itself, on the report's examples."""
    want = expected_rows(fixed_histories())
    assert want[1001][:3] == ("new", "b-new", None)  # name and body from the stored row; blob was sent (null)
    assert want[1002][:3] == ("new", None, b"new")
    assert want[1003][:3] == ("newer", None, None)
    assert want[1004][0] == P
    assert want[1005][0] == P


def _decoded(t: Table, rng: random.Random, events: list[tuple[int, Event]]) -> tuple[pa.Table, dict[int, str]]:
    """The batch as the source tasks decode it (each partition reduced on its own), and the
    value schemas they cut off."""
    parts: dict[int, list[tuple[bytes | None, bytes | None]]] = {p: [] for p in range(PARTITIONS)}
    for key, e in events:
        parts[rng.randrange(PARTITIONS)].append(t.event(e.op, key, e.row, e.seq))
    out = []
    for p, recs in parts.items():
        raw = pa.RecordBatch.from_arrays(
            [
                pa.array([TOPIC] * len(recs), pa.string()),
                pa.array([p] * len(recs), pa.int32()),
                pa.array(range(len(recs)), pa.int64()),
                pa.array([k for k, _ in recs], pa.binary()),
                pa.array([v for _, v in recs], pa.binary()),
                pa.array([0] * len(recs), pa.int64()),
            ],
            schema=ARROW_SCHEMA,
        )
        out += decode_batches(iter([raw]), combine=True, placeholder=Placeholder.parse(P))
    table = pa.Table.from_batches(out)
    schemas = {r["schema_id"]: r["value_schema"] for r in table.to_pylist() if r["value_schema"] is not None}
    return table, schemas


def _winners(t: Table, rng: random.Random, events: list[tuple[int, Event]]) -> Any:
    placeholder = Placeholder.parse(P)
    rows, schemas = _decoded(t, rng, events)
    winners, earlier = latest_and_earlier(rows, {}, placeholder)
    return flatten_latest(TOPIC, winners, earlier if earlier.num_rows else None, schemas, placeholder)


@pytest.mark.parametrize("soft", [False, True])
def test_the_arrow_fill_follows_the_model_for_many_seeds(soft: bool) -> None:
    """The Delta/Iceberg fill (flatten_latest, then fill_from_stored) without Spark, so that
    many seeds run: the stored state is the first batch's winners (rows, and their deletes as
    tombstones or soft-deleted rows)."""
    t = Table(TOPIC, COLUMNS)
    for seed in range(SEED, SEED + 50):
        rng = random.Random(seed)
        all_ = {key: random_history(rng, key) for key in range(1, 21)}
        all_.update(fixed_histories())
        first = _winners(t, rng, [(key, e) for key, h in all_.items() for e in h.first]).table
        dead = pc.fill_null(first.column("__deleted"), False)
        stored = first if soft else first.filter(pc.invert(dead))
        deleted = None if soft else first.filter(dead).select(["id", "__seq"])
        second = [(key, e) for key, h in all_.items() for e in h.second]
        rng.shuffle(second)
        flat = _winners(t, rng, second)
        table = flat.table
        if flat.unchanged:
            table, _ = fill_from_stored(table, flat.unchanged, stored, ["id"], deleted)
        got = {r["id"]: _cells(r) for r in table.to_pylist() if not r["__deleted"]}
        for key, h in all_.items():
            state = apply_model(None, h.first)
            after = apply_model(state, h.second)
            if after is state or after is None or after.deleted or after.row is None:
                continue  # the batch's winner loses to the stored state (the target's guard), or deletes
            want = tuple(after.row[c] for c in VALUES)
            assert got[key] == want, f"seed {seed} (soft={soft}): {_describe(key, h)}: got {got[key]}, want {want}"
