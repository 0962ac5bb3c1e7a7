"""pgoutput over the replication protocol against a private PostgreSQL 15."""

from __future__ import annotations

import pytest

from cdc_postgres.lsn import format_lsn, parse_lsn
from cdc_postgres.pgoutput import (
    UNCHANGED_TOAST,
    Begin,
    Commit,
    Delete,
    Insert,
    Message,
    PgOutputDecoder,
    PgOutputError,
    Relation,
    Truncate,
    Update,
)
from cdc_postgres.replication import ReplicationConnection, ReplicationError


def collect(conn: ReplicationConnection, until: type, timeout: float = 10.0, count: int = 1) -> list:
    decoder = PgOutputDecoder()
    out: list = []
    seen = 0
    for _ in range(200):
        x = conn.read(timeout / 50)
        if x is None:
            continue
        msg = decoder.decode(x.payload)
        out.append(msg)
        if isinstance(msg, until):
            seen += 1
            if seen >= count:
                return out
    raise AssertionError(f"no {until.__name__} within {timeout}s; got {out}")


def test_lsn_round_trip() -> None:
    assert parse_lsn("16/B374D848") == (0x16 << 32) | 0xB374D848
    assert format_lsn(parse_lsn("0/1D77E80")) == "0/1D77E80"
    with pytest.raises(ValueError, match="not an LSN"):
        parse_lsn("banana")


def test_stream_decodes_every_dml_kind(postgres_db) -> None:
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE t(id int PRIMARY KEY, v text, big text)")
    sql.execute("ALTER TABLE t ALTER COLUMN big SET STORAGE EXTERNAL")  # out of line, uncompressed
    sql.execute("CREATE TABLE f(id int PRIMARY KEY, v text)")
    sql.execute("ALTER TABLE f REPLICA IDENTITY FULL")
    sql.execute("CREATE PUBLICATION pub FOR ALL TABLES")
    with ReplicationConnection(postgres_db.dsn) as rc:
        slot = rc.create_slot("s_dml")
        assert slot.snapshot_name and slot.consistent_point > 0
        # Large value, stored out of line (TOAST) and left unchanged by the update below.
        big = "x" * 10_000 + "".join(chr(65 + i % 26) for i in range(30_000))
        sql.execute("INSERT INTO t VALUES (1, 'a', %s)", (big,))
        sql.execute("UPDATE t SET v = 'b' WHERE id = 1")
        sql.execute("INSERT INTO f VALUES (7, 'old')")
        sql.execute("UPDATE f SET v = 'new' WHERE id = 7")
        sql.execute("DELETE FROM t WHERE id = 1")
        sql.execute("SELECT pg_logical_emit_message(true, 'audit', 'hello')")
        sql.execute("TRUNCATE f")
        rc.start("s_dml", ["pub"])
        msgs = collect(rc, Commit, count=7)
    rels = {m.relation_id: m for m in msgs if isinstance(m, Relation)}
    t_rel = next(r for r in rels.values() if r.name == "t")
    assert t_rel.namespace == "public" and t_rel.replica_identity == "d"
    assert [(c.name, c.part_of_key) for c in t_rel.columns] == [("id", True), ("v", False), ("big", False)]
    assert next(r for r in rels.values() if r.name == "f").replica_identity == "f"

    dml = [m for m in msgs if isinstance(m, Insert | Update | Delete | Truncate | Message)]
    ins, upd, ins_f, upd_f, dele, message, trunc = dml
    assert ins.new.values == ("1", "a", big)
    # Unchanged TOAST column: flagged, not sent. Default identity: no old tuple (PK unchanged).
    assert upd.new.values == ("1", "b", UNCHANGED_TOAST) and upd.old is None
    assert ins_f.new.values == ("7", "old")
    assert upd_f.old is not None and not upd_f.old_is_key and upd_f.old.values == ("7", "old")
    assert dele.old_is_key and dele.old.values == ("1", None, None)
    assert message.prefix == "audit" and message.content == b"hello" and message.transactional
    assert isinstance(trunc, Truncate) and trunc.relation_ids == (ins_f.relation_id,)
    begins = [m for m in msgs if isinstance(m, Begin)]
    commits = [m for m in msgs if isinstance(m, Commit)]
    assert len(begins) == len(commits) == 7
    assert all(b.final_lsn == c.commit_lsn for b, c in zip(begins, commits, strict=True))
    assert [c.commit_lsn for c in commits] == sorted(c.commit_lsn for c in commits)


def test_confirmed_lsn_moves_the_slot_and_restart_resumes_after_it(postgres_db) -> None:
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE r(id int PRIMARY KEY)")
    sql.execute("CREATE PUBLICATION pub FOR TABLE r")
    with ReplicationConnection(postgres_db.dsn) as rc:
        rc.create_slot("s_resume", export_snapshot=False)
        sql.execute("INSERT INTO r VALUES (1)")
        sql.execute("INSERT INTO r VALUES (2)")
        rc.start("s_resume", ["pub"])
        first = next(m for m in collect(rc, Commit) if isinstance(m, Commit))
        # Nothing is confirmed until the caller says so: the slot still holds the WAL.
        assert _confirmed(sql, "s_resume") < first.end_lsn
        rc.confirm(first.end_lsn)
        rc.send_status(reply_requested=True)
        _wait(lambda: _confirmed(sql, "s_resume") >= first.end_lsn)
    with ReplicationConnection(postgres_db.dsn) as rc:
        rc.start("s_resume", ["pub"])
        inserts = [m for m in collect(rc, Commit) if isinstance(m, Insert)]
    assert [i.new.values for i in inserts] == [("2",)]


def test_starting_past_the_confirmed_position_confirms_nothing(postgres_db) -> None:
    """A reconnect starts after the last *emitted* event, whose offset may not be stored yet:
    the slot must keep that WAL until confirm() says the offset is stored."""
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE q(id int PRIMARY KEY)")
    sql.execute("CREATE PUBLICATION pub FOR TABLE q")
    with ReplicationConnection(postgres_db.dsn) as rc:
        created = rc.create_slot("s_unstored", export_snapshot=False).consistent_point
    sql.execute("INSERT INTO q VALUES (1)")
    ahead = parse_lsn(sql.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0])
    with ReplicationConnection(postgres_db.dsn) as rc:
        rc.start("s_unstored", ["pub"], ahead)
        for _ in range(5):
            rc.send_status(reply_requested=True)
            rc.read(0.1)
    assert _confirmed(sql, "s_unstored") == created
    with ReplicationConnection(postgres_db.dsn) as rc:  # the row is still there for the real resume
        rc.start("s_unstored", ["pub"])
        inserts = [m for m in collect(rc, Commit) if isinstance(m, Insert)]
    assert [i.new.values for i in inserts] == [("1",)]


def test_missing_slot_is_explained(postgres_db) -> None:
    with ReplicationConnection(postgres_db.dsn) as rc, pytest.raises(ReplicationError, match="no_such_slot"):
        rc.start("no_such_slot", ["pub"])


def test_user_without_replication_is_explained(postgres_db) -> None:
    sql = postgres_db.connect()
    sql.execute("CREATE ROLE plain LOGIN")
    dsn = postgres_db.dsn.replace("://postgres@", "://plain@")
    assert "://plain@" in dsn
    with pytest.raises(ReplicationError, match="REPLICATION"):
        ReplicationConnection(dsn)
    sql.execute("DROP ROLE plain")


def test_malformed_message_is_reported() -> None:
    with pytest.raises(PgOutputError, match="truncated"):
        PgOutputDecoder().decode(b"B\x00\x00")
    with pytest.raises(PgOutputError, match="unsupported"):
        PgOutputDecoder().decode(b"Z")


def _confirmed(sql, slot: str) -> int:
    row = sql.execute("SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = %s", (slot,)).fetchone()
    return parse_lsn(str(row[0]))


def _wait(cond, timeout: float = 10.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError("condition not met")
