"""Snapshot modes, markers, filters and masking."""

from __future__ import annotations

import time

import pytest

from tests.mysql.harness import MemoryOffsets, TaskRunner, after, connector_props, execute, op


def _markers(run: TaskRunner) -> list[tuple[str, str]]:
    return [(r.topic.split(".")[-1], r.value.get("source").get("snapshot")) for r in run.data() if op(r) == "r"]


@pytest.mark.parametrize("locking", ["minimal", "none"])
def test_snapshot_markers_and_handoff_without_gap_or_duplicate(mariadb_db, locking: str) -> None:
    execute(
        mariadb_db,
        "CREATE TABLE a (id INT PRIMARY KEY)",
        "CREATE TABLE b (id INT PRIMARY KEY)",
        "CREATE TABLE c (id INT PRIMARY KEY)",
        "INSERT INTO a VALUES (1), (2), (3)",
        "INSERT INTO c VALUES (1), (2)",
    )
    offsets = MemoryOffsets()
    with TaskRunner(connector_props(mariadb_db, snapshot__locking__mode=locking), offsets) as run:
        run.wait_data(5)
        execute(mariadb_db, "INSERT INTO b VALUES (9)")
        run.wait_data(6)
        assert run.task.status()["snapshot"][f"{mariadb_db.database}.a"] == {"rows": 3, "estimate": 3, "done": True}
    assert _markers(run) == [
        ("a", "first"), ("a", "true"), ("a", "last_in_data_collection"), ("c", "first_in_data_collection"),
        ("c", "last"),
    ]  # fmt: skip
    reads = [r for r in run.data() if op(r) == "r"]
    assert all(r.source_offset.get("snapshot") == "INITIAL" for r in reads[:-1])
    assert "snapshot" not in reads[-1].source_offset
    assert [op(r) for r in run.data()][-1] == "c"
    # The snapshot's schema is recorded as CREATE TABLE schema change events.
    ddl = [r.value.get("ddl") for r in run.records if r.topic == "dbserver1"]
    assert len(ddl) == 3 and all(d.startswith("CREATE TABLE") for d in ddl)


def test_snapshot_modes(mariadb_db) -> None:
    execute(mariadb_db, "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1)")
    base = connector_props(mariadb_db)

    # no_data: schema only, then streaming from the current position.
    with TaskRunner({**base, "snapshot.mode": "no_data"}) as run:
        run.poll_until(lambda rs: any(r.topic == "dbserver1" for r in rs), what="the schema change event")
        execute(mariadb_db, "INSERT INTO t VALUES (2)")
        assert [(op(r), after(r)["id"]) for r in run.wait_data(1)] == [("c", 2)]

    # initial_only: the snapshot, then nothing more.
    offsets = MemoryOffsets()
    with TaskRunner({**base, "snapshot.mode": "initial_only"}, offsets) as run:
        run.wait_data(2)
        execute(mariadb_db, "INSERT INTO t VALUES (3)")
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            run.poll_once()
        assert [op(r) for r in run.data()] == ["r", "r"]
    with TaskRunner({**base, "snapshot.mode": "initial_only"}, offsets) as run:
        run.poll_once()
        assert run.task.plan == "idle"

    # always: a snapshot at every start, even with stored offsets.
    with TaskRunner({**base, "snapshot.mode": "always"}, offsets) as run:
        assert [op(r) for r in run.wait_data(3)] == ["r", "r", "r"]

    # recovery: rebuild the schema history at the stored position, then stream from it.
    with TaskRunner({**base, "snapshot.mode": "recovery"}, offsets) as run:
        assert run.task.plan == "recovery"
        execute(mariadb_db, "INSERT INTO t VALUES (4)")
        assert [(op(r), after(r)["id"]) for r in run.wait_data(1)] == [("c", 4)]


def test_filters_masking_truncation_and_key_columns(mariadb_db) -> None:
    db = mariadb_db.database
    execute(
        mariadb_db,
        "CREATE TABLE keep (id INT PRIMARY KEY, secret VARCHAR(20), note VARCHAR(20), code VARCHAR(10), hidden INT)",
        "CREATE TABLE skip_me (id INT PRIMARY KEY)",
        "INSERT INTO keep VALUES (1, 'pw', 'a long note', 'X1', 7)",
        "INSERT INTO skip_me VALUES (1)",
    )
    props = connector_props(
        mariadb_db,
        **{
            "table.include.list": f"{db}\\.keep",
            "column.exclude.list": f"{db}\\.keep\\.hidden",
            "column.mask.with.4.chars": f"{db}\\.keep\\.secret",
            "column.truncate.to.3.chars": f"{db}\\.keep\\.note",
            "message.key.columns": f"{db}\\.keep:code",
        },
    )
    with TaskRunner(props) as run:
        run.wait_data(1)
        execute(mariadb_db, "INSERT INTO skip_me VALUES (2)", "INSERT INTO keep VALUES (2, 'pw2', 'xy', 'X2', 8)")
        recs = run.wait_data(2)
    assert {r.topic for r in recs} == {f"dbserver1.{db}.keep"}
    assert [after(r) for r in recs] == [
        {"id": 1, "secret": "****", "note": "a l", "code": "X1"},
        {"id": 2, "secret": "****", "note": "xy", "code": "X2"},
    ]
    assert [r.key.to_dict() for r in recs] == [{"code": "X1"}, {"code": "X2"}]
    assert recs[0].key_schema.name == f"dbserver1.{db}.keep.Key"


def test_writes_during_the_snapshot_are_neither_lost_nor_duplicated(mariadb_db) -> None:
    import threading

    values = ",".join(f"({i})" for i in range(20_000))
    execute(mariadb_db, "CREATE TABLE t (id INT PRIMARY KEY)", f"INSERT INTO t VALUES {values}")
    stop = threading.Event()
    written: list[int] = []

    def writer() -> None:
        with mariadb_db.connect() as conn, conn.cursor() as cur:
            n = 100_000
            while not stop.is_set():
                cur.execute(f"INSERT INTO t VALUES ({n})")
                written.append(n)
                n += 1
                time.sleep(0.001)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        with TaskRunner(connector_props(mariadb_db, max__batch__size=500, max__queue__size=1000)) as run:
            run.poll_until(
                lambda _: any(op(r) == "c" for r in run.data()) and len(run.data()) > 20_100, 60, "streamed writes"
            )
            stop.set()
            thread.join()
            total = 20_000 + len(written)
            run.wait_data(total, timeout=60)
            run.poll_once()
    finally:
        stop.set()
        thread.join()
    ids = [after(r)["id"] for r in run.data()]
    assert len(ids) == len(set(ids)) == total
    assert set(ids) == set(range(20_000)) | set(written)
    reads = [after(r)["id"] for r in run.data() if op(r) == "r"]
    assert set(range(20_000)) <= set(reads)
