"""The chaos workload: a thread that writes to the source tables for the whole run.

Driven by one seeded `random.Random`: single- and multi-row inserts, updates (some setting
NULL or ''), range updates, deletes, primary-key changes, re-inserts of keys deleted
earlier, and transactions spanning several tables. The orchestrator adds one-off operations
at chosen points of the kill schedule (`submit`): a transaction of many thousand rows,
`ALTER TABLE ADD COLUMN`, column DEFAULT changes, deleting given keys.

The writer survives the database being killed: on a lost connection it reconnects until the
server is back, re-reads which keys exist (the outcome of the transaction in flight is
unknown) and goes on. Its idea of the keys is only a guide for choosing operations; the
source tables themselves are the truth the comparison uses.
"""

from __future__ import annotations

import contextlib
import queue
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.chaos.db import SourceDb
from tests.chaos.schema import ACCOUNTS, BY_NAME, ORDER_LINES, TABLES, TAGS, Table, key_code, sku, value

Key = tuple[Any, ...]

# Column DEFAULT changes the workload makes (after `add_columns`); later inserts sometimes
# leave these columns out, so the new default is what the row gets.
DEFAULT_CHANGES = (("accounts", "region", "'emea'"), ("tags", "hits", "42"))


class KeyPool:
    """A set with O(1) random choice and removal."""

    def __init__(self, keys: list[Key] | None = None) -> None:
        self.items: list[Key] = []
        self.index: dict[Key, int] = {}
        for k in keys or []:
            self.add(k)

    def __len__(self) -> int:
        return len(self.items)

    def __contains__(self, k: Key) -> bool:
        return k in self.index

    def add(self, k: Key) -> None:
        if k not in self.index:
            self.index[k] = len(self.items)
            self.items.append(k)

    def remove(self, k: Key) -> None:
        i = self.index.pop(k, None)
        if i is None:
            return
        last = self.items.pop()
        if i < len(self.items):
            self.items[i] = last
            self.index[last] = i

    def choice(self, rng: random.Random) -> Key | None:
        return self.items[rng.randrange(len(self.items))] if self.items else None


@dataclass
class Special:
    """A one-off operation the orchestrator asks for; `done` is set once it committed."""

    name: str
    args: tuple[Any, ...] = ()
    done: threading.Event = field(default_factory=threading.Event)


@dataclass
class WriterStats:
    transactions: int = 0
    rows: int = 0
    reconnects: int = 0
    conflicts: int = 0
    ops: dict[str, int] = field(default_factory=dict)


class Writer:
    def __init__(self, db: SourceDb, seed: int, note: Callable[[str], None], pace: float = 0.06) -> None:
        self._thread = threading.Thread(target=self._loop, name="chaos-writer", daemon=True)
        self.db = db
        self.rng = random.Random(f"writer-{seed}")
        self.note = note
        self.pace = pace
        self.stats = WriterStats()
        self.failure: BaseException | None = None
        self._stop = threading.Event()
        self._specials: queue.Queue[Special] = queue.Queue()
        self._live: dict[str, KeyPool] = {t.name: KeyPool() for t in TABLES}
        self._deleted: dict[str, KeyPool] = {t.name: KeyPool() for t in TABLES}
        self._added = False
        self._defaults_changed = False
        self._next = {"accounts": 0, "order_id": 0, "sku": 0, "tags": 0}
        self._dirty = True  # re-read the keys before the first operation
        self._catalog: dict[str, dict[str, str | None]] = {}
        self._big_first: Key | None = None
        self._current: Special | None = None

    # -- the orchestrator's side -------------------------------------------------------------------
    def start(self) -> None:
        self._thread.start()

    def submit(self, name: str, *args: Any) -> Special:
        special = Special(name, args)
        self._specials.put(special)
        return special

    def forget(self, table: str, keys: list[Key]) -> None:
        """Keys deleted behind the writer's back (by the orchestrator): candidates for re-insert."""
        for k in keys:
            self._deleted[table].add(k)

    def stop(self, timeout: float = 120) -> None:
        """Finish the pending one-off operations, then stop."""
        deadline = time.monotonic() + timeout
        while self._thread.is_alive() and (not self._specials.empty() or self._current is not None):
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
        self._stop.set()
        self._thread.join(timeout)

    # -- the thread ----------------------------------------------------------------------------------
    def _loop(self) -> None:
        conn: Any = None
        while not self._stop.is_set():
            try:
                if conn is None:
                    conn = self.db.connect()
                if self._dirty:
                    self._resync(conn)
                if self._current is None and not self._specials.empty():
                    self._current = self._specials.get_nowait()
                if self._current is not None:
                    self._special(conn, self._current)
                    self._current.done.set()
                    self._current = None
                    continue
                self._random_transaction(conn)
                self._stop.wait(self.pace)
            except Exception as e:
                if self.db.transient(e):
                    if conn is not None:
                        _close(conn)
                    conn = None
                    self._dirty = True
                    self.stats.reconnects += 1
                    if self.stats.reconnects % 20 == 1:
                        first = (str(e).strip().splitlines() or [""])[0]
                        self.note(f"writer: {type(e).__name__}: {first[:120]}; reconnecting")
                    self._stop.wait(0.25)
                elif self.db.conflict(e):
                    _rollback(conn)
                    self._dirty = True
                    self.stats.conflicts += 1
                else:
                    self.failure = e
                    self.note(f"writer failed: {type(e).__name__}: {e}")
                    break
        if conn is not None:
            _close(conn)

    # -- the model -----------------------------------------------------------------------------------
    def _resync(self, conn: Any) -> None:
        """Which keys exist, and which one-off DDL happened: after a crash, the database says."""
        with conn.cursor() as cur:
            for t in TABLES:
                cur.execute(f"SELECT {', '.join(t.key)} FROM {t.name}")
                keys = [tuple(r) for r in cur.fetchall()]
                self._live[t.name] = KeyPool(keys)
                for k in keys:
                    self._deleted[t.name].remove(k)
                self._bump(t, keys)
        conn.commit()
        self._catalog = {t.name: self.db.column_defaults(conn, t.name) for t in TABLES}
        conn.commit()
        self._added = all(c.name in self._catalog[t.name] for t in TABLES for c in t.added)
        self._defaults_changed = all(self._catalog[table].get(col) is not None for table, col, _ in DEFAULT_CHANGES)
        self._dirty = False

    def _bump(self, t: Table, keys: list[Key]) -> None:
        if t is ACCOUNTS and keys:
            self._next["accounts"] = max(self._next["accounts"], max(k[0] for k in keys))
        elif t is ORDER_LINES and keys:
            self._next["order_id"] = max(self._next["order_id"], max(k[0] for k in keys))

    def _new_key(self, t: Table) -> Key:
        if t is ACCOUNTS:
            self._next["accounts"] += 1
            return (self._next["accounts"],)
        if t is ORDER_LINES:
            self._next["sku"] += 1
            order = self.rng.randrange(1, self._next["order_id"] + 2)
            self._next["order_id"] = max(self._next["order_id"], order)
            return (order, f"n{self._next['sku']}-" + sku(self._next["sku"], self.rng))
        self._next["tags"] += 1
        return (key_code(10_000_000 - self._next["tags"], self.rng),)  # counts down: never an initial key

    def _columns(self, t: Table) -> list[str]:
        """The value columns an insert sets: the added ones once they exist; a column whose
        DEFAULT changed is sometimes left out, so the row gets the default."""
        cols = [c.name for c in t.value_columns]
        if self._added:
            cols += [c.name for c in t.added]
        if self._defaults_changed:
            for table, col, _ in DEFAULT_CHANGES:
                if table == t.name and self.rng.random() < 0.4:
                    cols.remove(col)
        return cols

    # -- statements ----------------------------------------------------------------------------------
    def _insert(self, cur: Any, t: Table, keys: list[Key]) -> None:
        cols = self._columns(t)
        params = []
        for k in keys:
            vals = [self.db.adapt(t.column(c), value(self.rng, t.column(c), self.db.dialect)) for c in cols]
            params.append((*k, *vals))
        names = [*t.key, *cols]
        sql = f"INSERT INTO {t.name} ({', '.join(names)}) VALUES ({', '.join(['%s'] * len(names))})"
        for start in range(0, len(params), 500):
            cur.executemany(sql, params[start : start + 500])
        for k in keys:
            self._live[t.name].add(k)
            self._deleted[t.name].remove(k)
        self.stats.rows += len(keys)

    def _where(self, t: Table) -> str:
        return " AND ".join(f"{k} = %s" for k in t.key)

    def _update(self, cur: Any, t: Table, k: Key) -> None:
        candidates = [c.name for c in t.value_columns] + ([c.name for c in t.added] if self._added else [])
        cols = self.rng.sample(candidates, self.rng.randrange(1, 4))
        vals = [self.db.adapt(t.column(c), value(self.rng, t.column(c), self.db.dialect)) for c in cols]
        sets = ", ".join(f"{c} = %s" for c in cols)
        cur.execute(f"UPDATE {t.name} SET {sets} WHERE {self._where(t)}", (*vals, *k))
        self.stats.rows += 1

    def _delete(self, cur: Any, t: Table, k: Key) -> None:
        cur.execute(f"DELETE FROM {t.name} WHERE {self._where(t)}", k)
        self._live[t.name].remove(k)
        self._deleted[t.name].add(k)
        self.stats.rows += 1

    def _change_key(self, cur: Any, t: Table, old: Key) -> None:
        new = self._new_key(t)
        sets = ", ".join(f"{c} = %s" for c in t.key)
        cur.execute(f"UPDATE {t.name} SET {sets} WHERE {self._where(t)}", (*new, *old))
        self._live[t.name].remove(old)
        self._deleted[t.name].add(old)
        self._live[t.name].add(new)
        self.stats.rows += 1

    # -- one random transaction ---------------------------------------------------------------------
    def _step(self, cur: Any, kind: str, t: Table) -> None:
        """One operation of a transaction (it may do nothing when the table has no fitting key)."""
        live = self._live[t.name]
        if kind == "insert":
            self._insert(cur, t, [self._new_key(t) for _ in range(self.rng.randrange(1, 4))])
        elif kind == "insert_many":
            self._insert(cur, t, [self._new_key(t) for _ in range(self.rng.randrange(5, 60))])
        elif kind == "update":
            for _ in range(self.rng.randrange(1, 4)):
                if (k := live.choice(self.rng)) is not None:
                    self._update(cur, t, k)
        elif kind == "update_range":  # one statement, many rows
            lo = self.rng.randrange(1, max(2, self._next["accounts"]))
            cur.execute(
                "UPDATE accounts SET visits = visits + 1, owner = %s WHERE id BETWEEN %s AND %s",
                (self.rng.choice(["", None, "bulk"]), lo, lo + self.rng.randrange(5, 80)),
            )
        elif kind == "delete":
            for _ in range(self.rng.randrange(1, 3)):
                if (k := live.choice(self.rng)) is not None:
                    self._delete(cur, t, k)
        elif kind == "change_key":
            if (k := live.choice(self.rng)) is not None:
                self._change_key(cur, t, k)
        elif kind == "reinsert":
            k = self._deleted[t.name].choice(self.rng)
            if k is not None and k not in live:
                self._insert(cur, t, [k])

    _KINDS = (
        ("insert", 18),
        ("insert_many", 6),
        ("update", 26),
        ("update_range", 4),
        ("delete", 12),
        ("change_key", 8),
        ("reinsert", 8),
        ("multi", 18),
    )

    def _random_transaction(self, conn: Any) -> None:
        kinds, weights = zip(*self._KINDS, strict=True)
        kind = self.rng.choices(kinds, weights)[0]
        with conn.cursor() as cur:
            if kind == "multi":  # several operations over several tables, one commit
                for _ in range(self.rng.randrange(2, 7)):
                    sub = self.rng.choices(kinds[:-1], weights[:-1])[0]
                    self._step(cur, sub, self.rng.choice(TABLES))
            else:
                self._step(cur, kind, ACCOUNTS if kind == "update_range" else self.rng.choice(TABLES))
        conn.commit()
        self.stats.transactions += 1
        self.stats.ops[kind] = self.stats.ops.get(kind, 0) + 1

    # -- one-off operations --------------------------------------------------------------------------
    def _special(self, conn: Any, s: Special) -> None:
        with conn.cursor() as cur:
            if s.name == "big":
                self._big(conn, cur, int(s.args[0]))
            elif s.name == "add_columns":  # each ALTER only if a crash did not leave it done already
                for t in TABLES:
                    for c in t.added:
                        if c.name not in self._catalog[t.name]:
                            cur.execute(f"ALTER TABLE {t.name} ADD COLUMN {c.ddl(self.db.dialect)}")
                conn.commit()
                self._added = True
            elif s.name == "default_change":
                for table, col, default in DEFAULT_CHANGES:
                    if self._catalog[table].get(col) is None:
                        cur.execute(f"ALTER TABLE {table} ALTER COLUMN {col} SET DEFAULT {default}")
                conn.commit()
                self._defaults_changed = True
            elif s.name == "delete":
                table, keys = s.args
                t = BY_NAME[table]
                for k in keys:
                    self._delete(cur, t, k)
                conn.commit()
            else:
                raise ValueError(f"unknown special operation {s.name!r}")
        self.stats.ops[s.name] = self.stats.ops.get(s.name, 0) + 1
        self.note(f"writer: {s.name} committed")

    def _big(self, conn: Any, cur: Any, rows: int) -> None:
        """One transaction of `rows` new order lines plus an update of every account.

        If the database dies during it, the retry after the resync tells by the first key
        whether it committed."""
        first = self._big_first
        if first is not None and first in self._live["order_lines"]:
            return
        self._next["order_id"] += 1
        base = self._next["order_id"]
        keys = [(base + i // 10, f"big-{i}") for i in range(rows)]
        self._next["order_id"] = base + rows // 10 + 1
        self._big_first = keys[0]
        self._insert(cur, ORDER_LINES, keys)
        cur.execute("UPDATE accounts SET visits = visits + 1")
        conn.commit()
        self.stats.transactions += 1


def populate(db: SourceDb, seed: int, sizes: dict[str, int]) -> None:
    """Create the tables and their initial rows (what the first run snapshots)."""
    rng = random.Random(f"populate-{seed}")
    conn = db.connect()
    try:
        with conn.cursor() as cur:
            for t in TABLES:
                cur.execute(t.create_sql(db.dialect))
            conn.commit()
            keys: dict[str, list[Key]] = {
                "accounts": [(i,) for i in range(1, sizes["accounts"] + 1)],
                "order_lines": [(1 + i // 4, sku(i, rng)) for i in range(sizes["order_lines"])],
                "tags": [(key_code(i, rng),) for i in range(sizes["tags"])],
            }
            for t in (ACCOUNTS, ORDER_LINES, TAGS):
                cols = [c.name for c in t.value_columns]
                names = [*t.key, *cols]
                sql = f"INSERT INTO {t.name} ({', '.join(names)}) VALUES ({', '.join(['%s'] * len(names))})"
                batch = []
                for k in keys[t.name]:
                    vals = [db.adapt(t.column(c), value(rng, t.column(c), db.dialect)) for c in cols]
                    batch.append((*k, *vals))
                    if len(batch) == 500:
                        cur.executemany(sql, batch)
                        conn.commit()
                        batch = []
                if batch:
                    cur.executemany(sql, batch)
                    conn.commit()
    finally:
        _close(conn)


def _rollback(conn: Any) -> None:
    with contextlib.suppress(Exception):
        conn.rollback()


def _close(conn: Any) -> None:
    with contextlib.suppress(Exception):
        conn.close()
