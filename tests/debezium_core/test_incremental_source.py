"""The incremental snapshot engine (cdc_debezium.signals.incremental_source) against a fake database.

The per-database part here is a fake, on purpose: these tests check the algorithm, not a database. The
fake keeps a table in memory and a change log (its "binlog/WAL"): every write appends a change event and
every signal-table watermark an insert or delete event; the stream hands the log's events to the engine in
order. Seeded random interleavings run writes and stream reads inside each chunk's steps (before and after
each watermark, before the SELECT, and after it, before its rows are registered), so the stream may see a
window's changes before or after the rows are in the buffer. The checks are Debezium's (DBLog's) rules:

- the rows emitted at a window's close are the chunk's SELECT minus every key a streamed change touched
  while the window was open (a streamed change to a key in the buffer removes it from the buffer);
- replaying the emitted records (reads and changes, in order) gives the table as it is at the end, with
  every key read at most once by the snapshot.

The real connectors are tested against real servers in tests/mysql and tests/postgres.
"""

from __future__ import annotations

import random
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

import pytest

from cdc_debezium.signals import record as signal_types
from cdc_debezium.signals.config import SignalConfig
from cdc_debezium.signals.incremental import COLLECTIONS, PRIMARY_KEY, Collection, IncrementalSnapshotContext
from cdc_debezium.signals.incremental_source import Chunk, IncrementalSnapshotSource, key_of

TABLE_ID = "db.t"
SIGNALS_ID = "db.signals"


@dataclass(frozen=True)
class _Key:
    _values: tuple[Any, ...]


@dataclass(frozen=True)
class _Table:
    id: str

    def key(self, row: tuple[Any, ...]) -> _Key:
        return _Key((row[0],))


TABLE, SIGNALS = _Table(TABLE_ID), _Table(SIGNALS_ID)


@dataclass
class _Window:
    """A read-only window over transaction numbers: the low and high watermarks are the last committed."""

    chunk_id: str
    low: int
    high: int | None = None

    def opens(self, txn: int) -> bool:
        return txn > self.low

    def closes(self, txn: int) -> bool:
        return self.high is not None and txn > self.high


@dataclass
class World:
    """The fake database: a table of key -> version, the change log, and the stream's place in it."""

    rng: random.Random
    table: dict[int, int] = field(default_factory=dict)
    log: list[tuple[str, str, Any, Any, int]] = field(default_factory=list)  # (table, op, before, after, txn)
    streamed: int = 0
    txn: int = 0
    source: FakeSource | None = None
    out: list[tuple[str, Any, Any]] = field(default_factory=list)  # ("r"|op, key, row or None)
    windows: list[dict[str, Any]] = field(default_factory=list)  # per chunk: its SELECT and the keys changed

    def write(self) -> None:
        key = self.rng.randrange(60)
        self.txn += 1
        old = (key, self.table[key]) if key in self.table else None
        if old is not None and self.rng.random() < 0.25:
            del self.table[key]
            self.log.append((TABLE_ID, "d", old, None, self.txn))
            return
        self.table[key] = self.txn
        self.log.append((TABLE_ID, "u" if old else "c", old, (key, self.txn), self.txn))

    def signal(self, op: str, row: tuple[str, str, str]) -> None:
        self.txn += 1
        self.log.append((SIGNALS_ID, op, row if op == "d" else None, row if op == "c" else None, self.txn))

    def stream_one(self) -> bool:
        if self.streamed >= len(self.log):
            return False
        table_id, op, before, after, txn = self.log[self.streamed]
        self.streamed += 1
        assert self.source is not None
        source = self.source
        if table_id == TABLE_ID and source.ctx.window_open and self.windows and not source.read_only:
            for row in (before, after):
                if row is not None:
                    self.windows[-1]["changed"].add((row[0],))
        pos = {"txn": txn, "n": self.streamed}
        table = TABLE if table_id == TABLE_ID else SIGNALS
        if source._on_change(op, table, table_id, before, after, pos, {"n": self.streamed, **source.state}):
            row = after if after is not None else before
            self.out.append((op, row[0], after))
        return True

    def steps(self, n: int = 6) -> None:
        """Up to `n` random writes and stream reads."""
        for _ in range(self.rng.randrange(n + 1)):
            if self.rng.random() < 0.5:
                self.write()
            else:
                self.stream_one()


class FakeSource(IncrementalSnapshotSource):
    """The per-database part, faked: the World is its database and its stream."""

    def __init__(self, world: World, read_only: bool, watermarking: str, chunk_size: int) -> None:
        self.world = world
        self.state: dict[str, Any] = {}
        self.published: list[dict[str, Any]] = []
        signals = SignalConfig(("source",), None if read_only else SIGNALS_ID, "", "", 0.0, chunk_size, watermarking)
        super().__init__(signals, "test", None, None, read_only, lambda record: None)

    def captured_collections(self) -> list[str]:
        return [TABLE_ID]

    def _current_offset(self) -> Any:
        return None

    def _publish_state(self, state: dict[str, Any]) -> None:
        self.state = state
        self.published.append(state)

    def _captures_signal_table(self, table: Any) -> bool:
        return False

    def _column(self, row: Any, index: int) -> Any:
        return row[index] if index < len(row) else None

    def _chunk_table(self, current: Collection, cached: bool) -> Any:
        return TABLE

    def _key_names(self, table: Any) -> list[str]:
        return ["k"]

    def _max_key(self, current: Collection, order: list[str]) -> tuple[Any, ...] | None:
        return (max(self.world.table),) if self.world.table else None

    def _session(self, threaded: bool) -> Any:
        return nullcontext()

    def _select_chunk(self, session: Any, chunk: Chunk) -> tuple[dict[Any, Any], tuple[Any, ...] | None, int]:
        world = self.world
        world.steps()
        low = chunk.after[0] if chunk.after is not None else None
        keys = sorted(k for k in world.table if (low is None or k > low) and k <= chunk.maximum[0])[: chunk.size]
        rows = {(k,): (TABLE, (k, world.table[k])) for k in keys}
        world.windows[-1]["select"] = dict(rows)
        world.steps()  # the stream goes on before the rows are registered
        return rows, ((keys[-1],) if keys else None), len(keys)

    def _insert_signal(self, session: Any, values: tuple[str, str, str]) -> None:
        self.world.steps()
        if values[1] == signal_types.WINDOW_OPEN:
            self.world.windows.append({"id": values[0], "changed": set()})
        self.world.signal("c", values)
        self.world.steps()

    def _delete_signal(self, session: Any, signal_id: str) -> None:
        self.world.steps()
        self.world.signal("d", (signal_id, signal_types.WINDOW_OPEN, "{}"))
        self.world.steps()

    def _emit_rows(self, rows: list[Any], pos: Any, before: dict[str, Any], after: dict[str, Any]) -> None:
        window = self.world.windows[-1]
        if "window" in window:  # read.only: the changes of the transactions between the watermarks
            low, high = window["window"].low, window["window"].high
            window["changed"] = {
                (row[0],)
                for table_id, _, before, after, txn in self.world.log
                if table_id == TABLE_ID and low < txn <= high
                for row in (before, after)
                if row is not None
            }
        expected = {k: v for k, v in window["select"].items() if k not in window["changed"]}
        assert {key_of(t, row): (t, row) for t, row in rows} == expected, "the window's rows break the rule"
        window["closed"] = True
        for _, row in rows:
            self.world.out.append(("r", row[0], row))

    def _reset_connection(self) -> None:
        pass

    # read.only: transaction-number watermarks
    def _read_only_watermark(self, session: Any, chunk_id: str, which: str) -> None:
        self.world.steps()
        if which == "open":
            self._window = _Window(chunk_id, self.world.txn)
            self.world.windows.append({"id": chunk_id, "changed": set(), "window": self._window})
        elif self._window is not None and self._window.chunk_id == chunk_id:
            self._window.high = self.world.txn
        self.world.steps()

    def _transaction_of(self, pos: Any) -> tuple[int]:
        return (pos["txn"],)

    def _window_close_at(self, pos: Any, offset: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        return pos, offset

    def _poll_window(self) -> None:
        window = self._window_of_chunk()
        world = self.world
        last = world.log[world.streamed - 1][4] if world.streamed else 0
        if window is not None and window.high is not None and last >= window.high and world.streamed == len(world.log):
            self._read_only_close({"txn": last}, {"n": world.streamed})


def _run(seed: int, read_only: bool, watermarking: str) -> tuple[World, FakeSource]:
    rng = random.Random(seed)
    world = World(rng)
    for k in range(0, 50, rng.choice((1, 2, 3))):
        world.table[k] = 0
    source = FakeSource(world, read_only, watermarking, chunk_size=rng.choice((1, 3, 7, 100)))
    world.source = source
    source._attached()
    source.add_collections([Collection(TABLE_ID)], "sig-1")
    initial = dict(world.table)
    for _ in range(2000):
        if not source.ctx.running:
            break
        world.steps()
        source.tick()
        if source.ctx.chunk_id is not None:
            world.stream_one()
    else:
        pytest.fail(f"seed {seed}: the snapshot did not end")
    while world.stream_one():
        pass
    # the keys never written were read by the snapshot exactly once, with their first value
    reads = [key for op, key, _ in world.out if op == "r"]
    assert len(reads) == len(set(reads)), f"seed {seed}: a key read twice"
    written = {
        row[0] for table_id, _, before, after, _ in world.log if table_id == TABLE_ID for row in (before, after) if row
    }
    untouched = set(initial) - written
    assert untouched <= set(reads), f"seed {seed}: keys never read: {sorted(untouched - set(reads))}"
    return world, source


def _replay(out: list[tuple[str, Any, Any]]) -> dict[int, int]:
    state: dict[int, int] = {}
    for op, key, row in out:
        if op == "d":
            state.pop(key, None)
        else:
            state[key] = row[1]
    return state


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize(
    "read_only,watermarking",
    [(False, "insert_insert"), (False, "insert_delete"), (True, "insert_insert")],
    ids=["insert_insert", "insert_delete", "read_only"],
)
def test_random_interleavings_keep_the_window_rule_and_converge(seed: int, read_only: bool, watermarking: str) -> None:
    world, source = _run(seed, read_only, watermarking)
    assert all(w.get("closed") for w in world.windows), f"seed {seed}: a window never closed"
    assert _replay(world.out) == world.table, f"seed {seed}: the records do not give the table"
    assert source.state == {} and not source.ctx.running


def test_add_and_stop_persist_the_state_under_the_lock() -> None:
    world = World(random.Random(1), table={1: 0, 2: 0})
    source = FakeSource(world, False, "insert_insert", 1)
    world.source = source
    source.add_collections([Collection(TABLE_ID, "k > 0")], "sig-9")
    state = source.state
    assert COLLECTIONS in state and IncrementalSnapshotContext.load(state).collections == [
        Collection(TABLE_ID, "k > 0")
    ]
    held: list[bool] = []
    original = source.ctx.remove

    def remove(ids: set[str] | None) -> list[str]:
        held.append(source.lock._is_owned())  # type: ignore[attr-defined]
        return original(ids)

    source.ctx.remove = remove  # type: ignore[method-assign]
    source.stop_collections(None, "sig-10")
    assert held == [True] and source.state == {}


def test_the_offset_state_resumes_where_it_stopped() -> None:
    """The published state, loaded again (a restart), continues after the last key emitted."""
    world = World(random.Random(2), table={k: 0 for k in range(10)})
    world.steps = lambda n=6: None  # type: ignore[method-assign]  # no writes: the chunks are known
    source = FakeSource(world, False, "insert_insert", 3)
    world.source = source
    source.add_collections([Collection(TABLE_ID)], "sig-1")
    source.tick()  # the first chunk: keys 0..2
    while world.stream_one():
        pass
    state = source.state
    assert state[PRIMARY_KEY] and IncrementalSnapshotContext.load(state).last_key == (2,)
    again = FakeSource(world, False, "insert_insert", 3)
    again.ctx = IncrementalSnapshotContext.load(state)
    assert again.ctx.current == Collection(TABLE_ID) and again.ctx.maximum_key == (9,)
