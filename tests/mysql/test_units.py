"""Unit tests for what the private MariaDB cannot exercise: MySQL 8 GTID sets, compressed event types, parsing."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from cdc.api import ConnectException
from cdc_debezium.filters import IncludeExclude, compile_list
from cdc_debezium.queue import ChangeEventQueue, QueueClosed
from cdc_mysql.gtid import MariaDbGtidSet, MySqlGtidSet
from cdc_mysql.offset_context import MySqlOffsetContext
from cdc_mysql.schema_change import classify, is_ddl
from cdc_mysql.streaming import COMPRESSED_EVENTS, CompressedTransactionError, MySqlStreamingChangeEventSource

UUID_A = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
UUID_B = "5f21fa47-71ca-11e1-9e33-c80aa9429563"


def test_mysql_gtid_set_merges_and_filters_by_source_uuid() -> None:
    s = MySqlGtidSet(f"{UUID_A}:1-5,\n{UUID_B}:1-3")
    s.add(f"{UUID_A}:6")
    s.add(f"{UUID_B}:4")
    assert str(s) == f"{UUID_A}:1-6,{UUID_B}:1-4"
    keep_a = IncludeExclude(compile_list("gtid.source.includes", [UUID_A]), [])
    assert str(s.filtered(keep_a)) == f"{UUID_A}:1-6"


def test_mariadb_gtid_set_keeps_the_last_gtid_per_domain() -> None:
    s = MariaDbGtidSet("0-1-100,1-2-7")
    s.add("0-1-101")
    s.add("2-3-1")
    assert str(s) == "0-1-101,1-2-7,2-3-1"
    drop_1 = IncludeExclude([], compile_list("gtid.source.excludes", ["1"]))
    assert str(s.filtered(drop_1)) == "0-1-101,2-3-1"


def test_offset_round_trip_and_legacy_snapshot_flag() -> None:
    ctx = MySqlOffsetContext("mysql-bin.000003", 154, "0-1-5", event=2, row=7, ts_sec=10, server_id=1)
    assert ctx.offset() == {
        "file": "mysql-bin.000003", "pos": 154, "gtids": "0-1-5", "event": 2, "row": 7, "ts_sec": 10, "server_id": 1
    }  # fmt: skip
    assert MySqlOffsetContext.load(ctx.offset()) == ctx
    assert MySqlOffsetContext.load({"file": "f", "pos": 4, "snapshot": True}).snapshot
    assert MySqlOffsetContext.load({"file": "f", "pos": 4, "snapshot": "INITIAL"}).snapshot
    with pytest.raises(ConnectException, match="no valid 'file'/'pos'"):
        MySqlOffsetContext.load({"lsn": 5})


@pytest.mark.parametrize("event_type", sorted(COMPRESSED_EVENTS))
def test_every_compressed_event_type_fails_instead_of_being_dropped(event_type: int) -> None:
    source = MySqlStreamingChangeEventSource.__new__(MySqlStreamingChangeEventSource)
    with pytest.raises(CompressedTransactionError, match="cannot be decoded") as e:
        source._not_implemented(SimpleNamespace(event_type=event_type), "mysql-bin.000009", 1234)
    assert "mysql-bin.000009:1234" in str(e.value)
    if event_type == 0x28:
        assert "binlog_transaction_compression=OFF" in str(e.value)


def test_ddl_classification() -> None:
    assert classify("CREATE TABLE IF NOT EXISTS `db`.`t 1` (id INT)").tables == (("db", "t 1"),)
    assert classify("/* x */ ALTER TABLE t ADD c INT").kind == "ALTER"
    assert classify("DROP TABLE IF EXISTS a.b").tables == (("a", "b"),)
    assert classify("TRUNCATE t").kind == "TRUNCATE"
    assert classify("RENAME TABLE a TO b").kind == "ALTER"
    rename = classify("RENAME TABLE a TO a_old, `db`.`b` TO a")
    assert rename.tables == ((None, "a"), ("db", "b")) and rename.renamed_to == ((None, "a_old"), (None, "a"))
    assert classify("ALTER TABLE a ADD c INT, RENAME TO x.b").renamed_to == (("x", "b"),)
    assert classify("ALTER TABLE a RENAME COLUMN c TO d, RENAME INDEX i TO j").renamed_to == ()
    assert classify("ALTER TABLE a ADD c INT COMMENT 'x, rename to b'").renamed_to == ()
    assert classify("DROP TABLE IF EXISTS a, `b`.c").tables == ((None, "a"), ("b", "c"))
    assert classify("CREATE DATABASE x").kind == "DATABASE"
    assert not is_ddl("SAVEPOINT s1") and not is_ddl("GRANT SELECT ON *.* TO x") and is_ddl("CREATE INDEX i ON t(c)")


def test_queue_blocks_the_producer_when_full_and_releases_it_on_close() -> None:
    q: ChangeEventQueue[int] = ChangeEventQueue(2, 4, 10)
    q.enqueue_many([1, 2])
    q.enqueue_many([3, 4])
    blocked = threading.Event()
    outcome: list[str] = []

    def produce() -> None:
        blocked.set()
        try:
            q.enqueue_many([5])
            outcome.append("enqueued")
        except QueueClosed:
            outcome.append("closed")

    t = threading.Thread(target=produce)
    t.start()
    blocked.wait()
    assert q.poll() == [1, 2]  # makes room: the producer proceeds
    t.join(5)
    assert outcome == ["enqueued"] and q.high_water == 4
    q.enqueue_many([6])
    t2 = threading.Thread(target=produce)
    t2.start()
    blocked.wait()
    q.close()
    t2.join(5)
    assert outcome[-1] == "closed"


def test_queue_rejects_a_queue_not_larger_than_a_batch() -> None:
    with pytest.raises(ValueError, match=r"max.queue.size \(10\) must be larger than max.batch.size \(10\)"):
        ChangeEventQueue(10, 10, 100)


def test_row_builder_skips_identity_converters_and_tolerates_missing_columns() -> None:
    from cdc.api import Schema, SchemaBuilder
    from cdc_mysql.row_builder import compile_row_builder
    from cdc_mysql.value_converters import IDENTITY

    schema = SchemaBuilder.struct().field("id", Schema.INT32_SCHEMA).field("it's", Schema.OPTIONAL_STRING_SCHEMA)
    schema = schema.build()
    build = compile_row_builder(schema, [("id", IDENTITY), ("it's", lambda v: None if v is None else v.upper())])
    assert build({"id": 1, "it's": "a"}).to_dict() == {"id": 1, "it's": "A"}
    assert build({"id": 2}).to_dict() == {"id": 2, "it's": None}  # a row image without the column


def test_offset_keeps_the_open_transaction_for_a_resume() -> None:
    from cdc_debezium.transaction import TransactionMonitor

    stored = {"file": "f", "pos": 4, "event": 1, "row": 2, "transaction_id": "0-1-7",
              "transaction_data_collection_order_db.t": 5, "transaction_data_collection_order_db.u": 2}  # fmt: skip
    off = MySqlOffsetContext.load(stored)
    assert off.offset() == {"file": "f", "pos": 4, "event": 1, "row": 2, "ts_sec": 0}
    tm = TransactionMonitor("p.transaction")
    tm.restore(off.transaction)
    assert (tm.tx_id, tm.total) == ("0-1-7", 7)
    assert tm.block("db.t").get("data_collection_order") == 6 and tm.block("db.t").get("total_order") == 9
    assert tm.store({})["transaction_data_collection_order_db.t"] == 7
