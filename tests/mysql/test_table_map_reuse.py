"""TableMapReuse (cdc_mysql/table_map_reuse.py) changes nothing but speed: the same binlog, streamed
with and without it, gives the same records, byte for byte.

The binlog comes from a seeded workload on tables of several key shapes (INT, UUID text, composite
with binary), in single-row and multi-table transactions, with what changes a table map at odd
moments: ALTER TABLE (add, drop and retype columns), tables swapped by RENAME TABLE, TRUNCATE, FLUSH
TABLES (new table ids for unchanged tables) and FLUSH BINARY LOGS (a rotation: the library drops
its maps). The run with reuse is also stopped and resumed at a random point, where the restarted
reader knows no table map yet.
"""

from __future__ import annotations

import random
import uuid
from types import SimpleNamespace
from typing import Any

import pytest

from cdc.api import SourceRecord
from cdc_mysql.streaming import MySqlStreamingChangeEventSource
from tests.mysql.harness import MemoryOffsets, TaskRunner, connector_props, execute

SEEDS = [11, 2027, 90210]


class Workload:
    def __init__(self, server: Any, rng: random.Random) -> None:
        self.server, self.rng = server, rng
        self.ids: dict[str, list[Any]] = {"a": [], "a2": [], "b": [], "c": []}
        self.extra: dict[str, list[str]] = {"a": [], "a2": []}
        self.n = 0

    def create(self) -> None:
        execute(
            self.server,
            "CREATE TABLE a (id INT PRIMARY KEY, v VARCHAR(20), n INT)",
            "CREATE TABLE a2 (id INT PRIMARY KEY, v VARCHAR(20), n INT)",
            "CREATE TABLE b (k CHAR(36) PRIMARY KEY, payload TEXT, f DOUBLE)",
            "CREATE TABLE c (x INT, y VARBINARY(8), v INT, PRIMARY KEY (x, y))",
            "CREATE TABLE z (id INT PRIMARY KEY)",
        )

    def _row(self, table: str) -> str:
        rng, self.n = self.rng, self.n + 1
        n = self.n
        if table in ("a", "a2"):
            self.ids[table].append(n)
            v = rng.choice(["NULL", "''", f"'v{n}'", "'" + "x" * 20 + "'"])
            return f"INSERT INTO {table} (id, v, n) VALUES ({n}, {v}, {rng.randint(-(2**31), 2**31 - 1)})"
        if table == "b":
            k = str(uuid.UUID(int=rng.getrandbits(128)))
            self.ids["b"].append(k)
            return f"INSERT INTO b VALUES ('{k}', {rng.choice(['NULL', repr('p' * rng.randint(0, 3000))])}, {n / 7})"
        y = bytes(rng.randrange(256) for _ in range(rng.randint(0, 8)))
        self.ids["c"].append((n, y))
        return f"INSERT INTO c VALUES ({n}, X'{y.hex()}', {n})"

    def _change(self, table: str) -> str:
        rng = self.rng
        if not self.ids[table] or rng.random() < 0.4:
            return self._row(table)
        key = rng.choice(self.ids[table])
        if rng.random() < 0.3:
            self.ids[table].remove(key)
            where = self._where(table, key)
            return f"DELETE FROM {table} WHERE {where}"
        sets = {
            "a": "n = n DIV 2",
            "a2": "v = LEFT(CONCAT(COALESCE(v, ''), 'u'), 20)",
            "b": "f = f + 1",
            "c": "v = v + 1",
        }
        return f"UPDATE {table} SET {sets[table]} WHERE {self._where(table, key)}"

    @staticmethod
    def _where(table: str, key: Any) -> str:
        if table == "b":
            return f"k = '{key}'"
        if table == "c":
            return f"x = {key[0]} AND y = X'{key[1].hex()}'"
        return f"id = {key}"

    def _ddl(self) -> list[str]:
        rng = self.rng
        kind = rng.choice(["add", "drop", "retype", "swap", "truncate", "flush", "rotate"])
        table = rng.choice(["a", "a2"])
        if kind == "add" or (kind == "drop" and not self.extra[table]):
            self.n += 1
            col = f"e{self.n}"
            self.extra[table].append(col)
            return [f"ALTER TABLE {table} ADD COLUMN {col} {rng.choice(['INT', 'VARCHAR(9)', 'DATETIME(3)'])} NULL"]
        if kind == "drop":
            col = self.extra[table].pop(rng.randrange(len(self.extra[table])))
            return [f"ALTER TABLE {table} DROP COLUMN {col}"]
        if kind == "retype":
            return [f"ALTER TABLE {table} MODIFY n {rng.choice(['BIGINT', 'INT'])}"]
        if kind == "swap":
            self.ids["a"], self.ids["a2"] = self.ids["a2"], self.ids["a"]
            self.extra["a"], self.extra["a2"] = self.extra["a2"], self.extra["a"]
            return ["RENAME TABLE a TO swap_tmp, a2 TO a, swap_tmp TO a2"]
        if kind == "truncate":
            self.ids["c"] = []
            return ["TRUNCATE TABLE c"]
        if kind == "flush":
            return ["FLUSH TABLES"]
        return ["FLUSH BINARY LOGS"]

    def run(self, steps: int) -> None:
        rng = self.rng
        with self.server.connect() as conn, conn.cursor() as cur:
            conn.autocommit(True)
            for _ in range(steps):
                roll = rng.random()
                if roll < 0.06:
                    for sql in self._ddl():
                        cur.execute(sql)
                elif roll < 0.25:  # one transaction over several tables
                    conn.begin()
                    for _ in range(rng.randint(2, 5)):
                        cur.execute(self._change(rng.choice(["a", "a2", "b", "c"])))
                    conn.commit()
                else:
                    cur.execute(self._change(rng.choice(["a", "a2", "b", "c"])))
            cur.execute("INSERT INTO z VALUES (1)")  # the end marker


def _position(server: Any) -> dict[str, Any]:
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SHOW MASTER STATUS")
        file, pos = cur.fetchone()[:2]
    return {"file": str(file), "pos": int(pos)}


def _comparable(r: SourceRecord) -> tuple[Any, ...]:
    """The record without the processing time at the top of change and schema change events
    (ts_ms/us/ns: when the connector built the record)."""

    def plain(v: Any) -> Any:
        return v.to_dict() if hasattr(v, "to_dict") else v

    value = plain(r.value)
    if isinstance(value, dict):
        value = {k: v for k, v in value.items() if k not in ("ts_ms", "ts_us", "ts_ns")}
    return (r.topic, plain(r.key), value, r.source_offset)


def _stream(server: Any, start: dict[str, Any], stop_after: int | None = None) -> tuple[list[SourceRecord], int]:
    """Every record from `start` to the end marker; with `stop_after`, the task is stopped once it
    emitted that many and a new one resumes from the stored offset. Also the table maps reused."""
    props = connector_props(server, snapshot__mode="no_data")  # the offset says where to start
    offsets = MemoryOffsets()
    offsets.put({"server": props["topic.prefix"]}, dict(start))
    records: list[SourceRecord] = []
    reused = 0

    def done(recs: list[SourceRecord]) -> bool:
        return any(r.topic.endswith(".z") for r in recs) or (stop_after is not None and len(recs) >= stop_after)

    for _ in range(2):
        with TaskRunner(props, offsets) as run:
            run.poll_until(lambda recs: done(recs), timeout=90, what="the end marker")
            streaming = run.task.streaming
            if streaming is not None and streaming.table_map_reuse is not None:
                reused += streaming.table_map_reuse.reused
            records.extend(run.records)
        if any(r.topic.endswith(".z") for r in records):
            return records, reused
        stop_after = None
    raise AssertionError("the end marker never came")


@pytest.mark.parametrize("seed", SEEDS)
def test_the_same_binlog_gives_the_same_records_with_and_without_reuse(
    private_db: Any, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(seed)
    load = Workload(private_db, rng)
    load.create()
    start = _position(private_db)
    load.run(400)

    monkeypatch.setattr(MySqlStreamingChangeEventSource, "REUSE_TABLE_MAPS", False)
    plain, none_reused = _stream(private_db, start)
    monkeypatch.setattr(MySqlStreamingChangeEventSource, "REUSE_TABLE_MAPS", True)
    reusing, reused = _stream(private_db, start, stop_after=rng.randint(1, len(plain) - 1))

    assert none_reused == 0
    assert reused > 100, f"seed {seed}: only {reused} table maps were reused"
    assert len(reusing) == len(plain), f"seed {seed}: {len(reusing)} records with reuse, {len(plain)} without"
    for i, (x, y) in enumerate(zip(reusing, plain, strict=True)):
        assert _comparable(x) == _comparable(y), f"seed {seed}: record {i} differs:\n{x}\n{y}"
    ddl = [r for r in plain if r.topic == "dbserver1"]
    assert ddl, f"seed {seed}: the workload made no schema change"


# -- the rule itself, on constructed packets -------------------------------------------------------


class _Reader:
    """What TableMapReuse reads and sets on python-mysql-replication's BinLogStreamReader."""

    def __init__(self, checksum: bool) -> None:
        self._BinLogStreamReader__freeze_schema = False
        self._BinLogStreamReader__use_checksum = checksum
        self._stream_connection = object()
        self.table_map: dict[int, Any] = {}


class _Table:
    pass


def _packet(table_id: int, body: bytes, event_type: int = 0x13, checksum: bytes = b"") -> bytes:
    header = bytes([0]) + (1795762383).to_bytes(4, "little") + bytes([event_type]) + bytes(14)
    return header + table_id.to_bytes(6, "little") + body + checksum


def _parsed(reuse: Any, reader: _Reader, table_id: int, packet: bytes) -> None:
    """As if the library parsed the packet into a new table map and the reader saw the event."""
    table = reader.table_map[table_id] = _Table()
    wrapper = SimpleNamespace(packet=SimpleNamespace(_data=packet))  # BinLogPacketWrapper around MysqlPacket
    reuse.parsed(SimpleNamespace(table_obj=table, packet=wrapper))


@pytest.mark.parametrize("checksum", [True, False])
def test_only_a_byte_identical_body_of_the_library_s_current_map_is_skipped(checksum: bool) -> None:
    from cdc_mysql.table_map_reuse import TableMapReuse

    reader, reuse = _Reader(checksum), TableMapReuse()
    reuse.attach(reader)
    conn = reader._stream_connection
    crc = lambda n: n.to_bytes(4, "little")  # noqa: E731 - the last 4 bytes differ each time
    freeze = lambda: reader._BinLogStreamReader__freeze_schema  # noqa: E731

    first = _packet(7, b"\x00\x00db\x00t\x00" + b"cols", checksum=crc(1))
    reuse.packet_read(conn, first)
    assert not freeze()  # the library holds no map for table 7 yet
    _parsed(reuse, reader, 7, first)
    reuse.packet_read(conn, _packet(7, b"\x00\x00db\x00t\x00" + b"cols", checksum=crc(2)))
    assert freeze() is checksum  # the same body; without a checksum the last 4 bytes are the body's
    reuse.packet_read(conn, _packet(7, b"\x00\x00db\x00t\x00" + b"colz", checksum=crc(3)))
    assert not freeze()  # one byte differs
    reuse.packet_read(conn, _packet(8, b"\x00\x00db\x00t\x00" + b"cols", checksum=crc(4)))
    assert not freeze()  # another table id
    reader.table_map.clear()  # a rotation: the library dropped its maps
    reuse.packet_read(conn, first)
    assert not freeze()
    assert reuse.reused == (1 if checksum else 0)


def test_other_events_and_other_connections_leave_the_flag_alone() -> None:
    from cdc_mysql.table_map_reuse import TableMapReuse

    reader, reuse = _Reader(True), TableMapReuse()
    reuse.attach(reader)
    packet = _packet(7, b"body-of-the-map", checksum=b"abcd")
    _parsed(reuse, reader, 7, packet)
    reuse.packet_read(object(), packet)  # the reader's control connection (a query's result packets)
    assert reader._BinLogStreamReader__freeze_schema is False
    reuse.packet_read(reader._stream_connection, packet)
    assert reader._BinLogStreamReader__freeze_schema is True
    reuse.packet_read(reader._stream_connection, _packet(7, b"body-of-the-map", event_type=0x1E, checksum=b"abcd"))
    assert reader._BinLogStreamReader__freeze_schema is True  # only a TABLE_MAP changes it; others ignore it


def test_a_changed_library_is_refused_at_attach() -> None:
    from cdc_mysql.table_map_reuse import TableMapReuse

    with pytest.raises(RuntimeError, match="python-mysql-replication changed"):
        TableMapReuse().attach(object())
