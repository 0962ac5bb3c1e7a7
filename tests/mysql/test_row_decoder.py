"""The compiled row decoder against python-mysql-replication's own `rows`, event by event.

Every rows event of a workload over every column type (NULLs, updates, deletes, multi-byte
charsets, a charset Python has no codec for, zero dates, all fractional precisions,
MINIMAL row images) is decoded twice: by `RowDecoders` and, rewound, by the library. The
values must be identical, and the compiled path must have decoded all of them.
"""

from __future__ import annotations

import copy
from typing import Any

from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

from cdc_mysql.row_decoder import RowDecoders, compile_decoder
from tests.mysql.test_types import COLUMNS, VALUES

EXTRA = """,
  vc300 VARCHAR(300), c100 CHAR(100) CHARACTER SET utf8mb4, tt TINYTEXT, mt MEDIUMTEXT, lb LONGBLOB,
  uc VARCHAR(10) CHARACTER SET ucs2, dtm1 DATETIME(1), dtm2 DATETIME(2), dtm4 DATETIME(4), dtm5 DATETIME(5),
  ts6 TIMESTAMP(6) NULL, tm3 TIME(3), dneg DECIMAL(8,3), dz0 DATETIME, fl FLOAT, dd DOUBLE
"""
EXTRA_VALUES = (
    ", REPEAT('x', 290), 'ünï', 'tiny', REPEAT('m', 70000), REPEAT(x'ab', 70000), 'ucs', "
    "'2024-01-02 03:04:05.1', '2024-01-02 03:04:05.12', '2024-01-02 03:04:05.1234', '2024-01-02 03:04:05.12345', "
    "'1999-12-31 23:59:59.999999', '-12:00:00.5', -12345.678, '0000-00-00 00:00:00', -3.25, -1e300)"
)


def _strip(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if not k.endswith("none_sources")} for r in rows]


def _compare_events(server: Any, file: str, pos: int) -> tuple[RowDecoders, dict[str, int]]:
    stream = BinLogStreamReader(
        {"host": server.host, "port": server.port, "user": server.user, "password": server.password},
        server_id=9123,
        resume_stream=True,
        log_file=file,
        log_pos=pos,
        blocking=False,
        only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent],
        enable_logging=False,
    )
    decoders = RowDecoders()
    seen = {"write": 0, "update": 0, "delete": 0, "rows": 0}
    try:
        for ev in stream:
            wrapper = ev.packet
            raw = wrapper.packet
            start, read_bytes = raw._position, wrapper.read_bytes
            fast = decoders.rows(ev)
            raw._position, wrapper.read_bytes = start, read_bytes  # rewind for the library
            assert fast == _strip(ev.rows), f"{type(ev).__name__} on {ev.table}"
            kind = {WriteRowsEvent: "write", UpdateRowsEvent: "update", DeleteRowsEvent: "delete"}[type(ev)]
            seen[kind] += 1
            seen["rows"] += len(fast)
    finally:
        stream.close()
    return decoders, seen


def _position(server: Any) -> tuple[str, int]:
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SHOW MASTER STATUS")
        file, pos = cur.fetchone()[:2]
    return str(file), int(pos)


def test_compiled_rows_equal_the_librarys_for_every_type(mariadb_db) -> None:
    file, pos = _position(mariadb_db)
    with mariadb_db.connect() as conn, conn.cursor() as cur:
        cur.execute("SET SESSION sql_mode = ''")  # zero dates
        cur.execute(f"CREATE TABLE all_types ({COLUMNS}{EXTRA}) CHARACTER SET utf8mb4")
        for i in range(1, 4):
            cur.execute(f"INSERT INTO all_types VALUES {VALUES.format(id=i)[:-1].rstrip()}{EXTRA_VALUES}")
        cur.execute("INSERT INTO all_types (id) VALUES (10), (11)")  # every other column NULL or its default
        cur.execute("UPDATE all_types SET vc = 'changed', dtm6 = NULL, j = '[1]', dneg = 0.5, uc = NULL WHERE id <= 2")
        cur.execute("UPDATE all_types SET ti = 1, vc300 = REPEAT('y', 299) WHERE id = 10")
        cur.execute("DELETE FROM all_types WHERE id IN (3, 11)")
        # MINIMAL images: updates and deletes carry only the changed and key columns.
        cur.execute("SET SESSION binlog_row_image = 'MINIMAL'")
        cur.execute("UPDATE all_types SET si = 7 WHERE id = 1")
        cur.execute("DELETE FROM all_types WHERE id = 2")
        conn.commit()
    decoders, seen = _compare_events(mariadb_db, file, pos)
    assert seen["write"] >= 2 and seen["update"] >= 3 and seen["delete"] >= 2 and seen["rows"] >= 10
    assert decoders.fallbacks == 0


def test_a_bad_image_falls_back_to_the_library(mariadb_db) -> None:
    # A decoder compiled for another structure misreads the event: the position check catches it
    # and the library decodes the event from its start.
    file, pos = _position(mariadb_db)
    with mariadb_db.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))")
        cur.execute("INSERT INTO t VALUES (1, 'one'), (2, NULL), (3, 'three')")
        conn.commit()
    stream = BinLogStreamReader(
        {"host": mariadb_db.host, "port": mariadb_db.port, "user": mariadb_db.user, "password": mariadb_db.password},
        server_id=9124, resume_stream=True, log_file=file, log_pos=pos, blocking=False,
        only_events=[WriteRowsEvent], enable_logging=False,
    )  # fmt: skip
    decoders = RowDecoders()
    try:
        (ev,) = list(stream)
        table = ev.table_map[ev.table_id]
        wrong = copy.copy(table.columns[1])
        wrong.max_length = 1000  # a decoder expecting a 2-byte length
        bad = compile_decoder([table.columns[0], wrong], (ev.columns_present_bitmap,), "strict")
        table._cdc_row_decoders = {((ev.columns_present_bitmap,), "strict"): bad}
        rows = decoders.rows(ev)
    finally:
        stream.close()
    assert decoders.fallbacks == 1
    assert [r["values"] for r in rows] == [{"id": 1, "v": "one"}, {"id": 2, "v": None}, {"id": 3, "v": "three"}]
