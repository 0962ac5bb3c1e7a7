"""A lineage break while the connector streams is caught when it happens (issue 31, item 1).

Reproduced first on a private MariaDB: streaming, then `RESET MASTER`, an update `a2` (in the new
mysql-bin.000001, below the reader's position), `FLUSH BINARY LOGS` and an update `a3`: `a3`
arrived, `a2` never did, and the task ran on. Now the task stops before it emits anything of the
new history, with one line that says what happened and what to do (cdc_mysql/lineage_watch.py).

The seeded test varies what comes after the reset: how far the reader had read, whether the
server is idle for a while (the periodic check finds the position or the GTID state below what
was read) or written at once (the re-used GTID is found), a rotation, and how many changes.
Whatever the mix: either every row arrives, in order, or the task stops with the lineage error;
never a later row without an earlier one.
"""

from __future__ import annotations

import functools
import random
import time
from dataclasses import replace

import pytest

from cdc.api import ConnectException
from tests.mysql.harness import TaskRunner, connector_props, execute
from tests.support.task_context import MemoryOffsets


def _admin(server, *statements: str) -> None:
    with server.connect(database=None) as conn, conn.cursor() as cur:
        for statement in statements:
            cur.execute(statement)


def _reset_then_a2_a3(server) -> None:
    """The reproduction: RESET MASTER, `a2` in the new mysql-bin.000001, a rotation, then `a3`."""
    _admin(server, "RESET MASTER")
    execute(server, "UPDATE t SET v='a2' WHERE id=1")
    _admin(server, "FLUSH BINARY LOGS")
    execute(server, "UPDATE t SET v='a3' WHERE id=1")


def _stream_until_break(run: TaskRunner, timeout: float) -> ConnectException | None:
    """The task's stop, if it stops: the lineage watch's error, or the server's own refusal to go on
    (MariaDB's dump thread may end with error 1236 when it looks for the next binlog file)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            run.poll_once()
        except ConnectException as e:
            return e
        time.sleep(0.05)
    return None


def test_reset_master_while_streaming_stops_the_task_before_a_later_change(private_db) -> None:
    execute(private_db, "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))", "INSERT INTO t VALUES (1, 'a0')")
    with TaskRunner(connector_props(private_db)) as run:
        run.wait_data(1)
        run.wait_streaming()
        execute(
            private_db, *(f"INSERT INTO t VALUES ({i}, 'pad')" for i in range(2, 12)), "UPDATE t SET v='a1' WHERE id=1"
        )
        run.wait_data(12)
        _reset_then_a2_a3(private_db)
        error = _stream_until_break(run, timeout=15)
    assert error is not None, f"the task streamed on: {[r.value.get('after') for r in run.data()[-3:]]}"
    message = str(error)
    assert "\n" not in message and "snapshot.mode=when_needed" in message and "RESET MASTER" in message, message
    versions = [r.value.get("after").get("v") for r in run.data() if r.value.get("after").get("id") == 1]
    assert "a3" not in versions or "a2" in versions, f"a3 arrived without a2: {versions}"


@pytest.mark.parametrize("seed", [11, 23, 37, 41, 59])
def test_random_resets_never_let_a_later_change_through_without_the_earlier_ones(private_db, seed: int) -> None:
    rng = random.Random(seed)
    execute(private_db, "CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (0, 0)")
    with TaskRunner(connector_props(private_db)) as run:
        run.wait_data(1)
        run.wait_streaming()
        before = rng.randint(0, 30)  # how far the reader gets before the reset
        execute(private_db, *(f"INSERT INTO t VALUES ({i}, 0)" for i in range(1, before + 1)))
        run.wait_data(before + 1)
        _admin(private_db, "RESET MASTER")
        if rng.random() < 0.4:
            _stream_until_idle_checked = _stream_until_break(run, timeout=rng.uniform(0.0, 3.0))
            if _stream_until_idle_checked is not None:  # found while idle: the position or GTID state
                assert "\n" not in str(_stream_until_idle_checked)
                return
        after = rng.randint(1, 12)
        for k in range(after):
            execute(private_db, f"UPDATE t SET v = {k + 1} WHERE id = 0")
            if rng.random() < 0.3:
                _admin(private_db, "FLUSH BINARY LOGS")
        error = _stream_until_break(run, timeout=15)
    versions = [r.value.get("after").get("v") for r in run.data() if r.value.get("after").get("id") == 0]
    if error is None:
        assert versions == list(range(after + 1)), f"seed {seed}: the task ran on and skipped changes: {versions}"
    else:
        assert "\n" not in str(error) and "snapshot.mode=when_needed" in str(error)
        assert versions == list(range(len(versions))), (
            f"seed {seed}: a change arrived without the earlier ones: {versions}"
        )


def test_the_break_is_kept_in_the_offset_and_a_restart_snapshots_on_a_new_epoch(private_db) -> None:
    """The events read just before a break is noticed may be the new history's (its binlog grew past
    the reader's position: GTIDs and positions look valid), and their offsets are stored. Before the
    fix a restart then resumed from such an offset by GTID on a new epoch and never read what the new
    history wrote below the old position (found by tests/jobs/test_failover.py, seed 92001920). Now the
    stop stores the offset with `lineage_break`; a restart refuses to stream from it, and under
    snapshot.mode=when_needed takes a new snapshot whose events rank above everything (epoch 1)."""
    execute(private_db, "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))", "INSERT INTO t VALUES (1, 'a0')")
    props = connector_props(private_db)
    with TaskRunner(props) as run:
        run.wait_data(1)
        run.wait_streaming()
        execute(private_db, *(f"INSERT INTO t VALUES ({i}, 'pad')" for i in range(2, 12)))
        run.wait_data(11)
        _reset_then_a2_a3(private_db)
        error = _stream_until_break(run, timeout=15)
        assert error is not None, "the task streamed on"
    (stored,) = run.offsets.stored.values()
    assert stored.get("lineage_break"), f"the stop left no mark in the offset: {stored}"

    with pytest.raises(ConnectException) as refused, TaskRunner(props, offsets=run.offsets) as again:
        _stream_until_break(again, timeout=15)
    message = str(refused.value)
    assert "stopped streaming on a binlog lineage break" in message and "snapshot.mode=when_needed" in message

    when_needed = {**props, "snapshot.mode": "when_needed"}
    with TaskRunner(when_needed, offsets=run.offsets) as snap:
        rows = snap.wait_data(11)
    reads = [r for r in rows if r.value.get("op") == "r"]
    assert len(reads) == 11 and {r.value.get("source").get("sequence") for r in reads} == {'["1"]'}
    assert {r.value.get("after").get("v") for r in reads if r.value.get("after").get("id") == 1} == {"a3"}


def test_the_server_losing_the_binlog_mid_stream_also_marks_the_offset(private_db, monkeypatch) -> None:
    """MariaDB's dump thread may end the stream itself with error 1236 ("could not find next log")
    when the binlog it sends is reset under it, before the periodic lineage check runs. That stop
    must mark the offset as well: under CI load the test above once stopped this way and left an
    unmarked offset, from which a restart would have resumed in the new history. The periodic check
    is pushed out here, so that only the server's error or the re-used GTID can stop the stream."""
    from cdc_mysql import streaming
    from cdc_mysql.lineage_watch import LineageWatch

    monkeypatch.setattr(streaming, "LineageWatch", functools.partial(LineageWatch, interval_s=3600.0))
    execute(private_db, "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))", "INSERT INTO t VALUES (1, 'a0')")
    props = connector_props(private_db)
    with TaskRunner(props) as run:
        run.wait_data(1)
        run.wait_streaming()
        _admin(private_db, "FLUSH BINARY LOGS")  # the reader follows into mysql-bin.000002
        execute(private_db, *(f"INSERT INTO t VALUES ({i}, 'pad')" for i in range(2, 6)))
        run.wait_data(5)
        _reset_then_a2_a3(private_db)
        error = _stream_until_break(run, timeout=15)
        assert error is not None, "the task streamed on"
    assert "\n" not in str(error) and "snapshot.mode=when_needed" in str(error), error
    (stored,) = run.offsets.stored.values()
    assert stored.get("lineage_break"), f"the stop ({error}) left no mark in the offset: {stored}"
    with pytest.raises(ConnectException) as refused, TaskRunner(props, offsets=run.offsets) as again:
        _stream_until_break(again, timeout=15)
    assert "stopped streaming on a binlog lineage break" in str(refused.value)


@pytest.mark.parametrize("seed", [3, 19, 190745978])
def test_a_reset_whose_new_first_file_the_reader_passes_by_is_caught_at_the_rotation(
    private_db, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CI reproduction (seed 190745978 of tests/jobs/test_failover.py): the reader is far into
    mysql-bin.000001 (large rows), RESET MASTER, a few changes (the new mysql-bin.000001 ends below the
    reader's position, so the dump sends none of them), FLUSH BINARY LOGS and more changes at once.
    The dump rotates to mysql-bin.000002 and sends only the later ones, with GTIDs above those read
    and no idle pause for the periodic check: the new file's Gtid_list names the skipped GTIDs.

    In CI the periodic check had run just before the first commit of the stream, so it had no commit
    to look for; here it never runs (a one-hour interval), which makes that timing certain."""
    from cdc_mysql.lineage_watch import LineageWatch

    monkeypatch.setattr(LineageWatch.__init__, "__defaults__", (3600.0, None))
    rng = random.Random(seed)
    _admin(private_db, "RESET MASTER")  # the reader streams in mysql-bin.000001, the name a reset starts again
    execute(private_db, "CREATE TABLE t (id INT PRIMARY KEY, v INT, pad LONGTEXT)", "INSERT INTO t VALUES (0, 0, '')")
    with TaskRunner(connector_props(private_db)) as run:
        run.wait_data(1)
        run.wait_streaming()
        big = rng.randint(2, 6)
        execute(private_db, *(f"INSERT INTO t VALUES ({i}, 0, REPEAT('x', 20000))" for i in range(1, big + 1)))
        run.wait_data(big + 1)
        # More changes than the GTIDs read (2 + big) go to the new mysql-bin.000001, all small (it ends
        # below the reader's position): the later ones' GTIDs are above those read.
        skipped, later = big + 2 + rng.randint(1, 4), rng.randint(1, 4)
        _admin(private_db, "RESET MASTER")
        execute(private_db, *(f"UPDATE t SET v = {k + 1} WHERE id = 0" for k in range(skipped)))
        _admin(private_db, "FLUSH BINARY LOGS")
        execute(private_db, *(f"UPDATE t SET v = {skipped + k + 1} WHERE id = 0" for k in range(later)))
        error = _stream_until_break(run, timeout=15)
    versions = [r.value.get("after").get("v") for r in run.data() if r.value.get("after").get("id") == 0]
    print("ERROR", error, versions)
    assert error is not None, f"seed {seed}: the task streamed on: row 0 went through {versions}"
    assert "\n" not in str(error) and "snapshot.mode=when_needed" in str(error), error
    assert versions == list(range(len(versions))), f"seed {seed}: a change arrived without the earlier ones: {versions}"


@pytest.mark.parametrize("origin_matches", [True, False])
def test_a_resume_inside_a_transaction_checks_it_is_the_same_transaction(private_db, origin_matches: bool) -> None:
    """Found by tests/jobs/test_failover_live.py (seed 188014175): the job stopped inside transaction
    0-1-31, which the promoted replica never got; the restart resumed after 0-1-30 on the replica and
    skipped the first 4 events and 52 rows of the replica's own 0-2-31 as 'already read'. The offset
    now keeps the server that wrote the open transaction (Debezium's `server_id`); a resume inside a
    transaction that another server wrote stops on a lineage break instead of skipping its rows.
    Here the offset (taken from a record in the middle of a 3-statement transaction) names the writing
    server, or another one."""
    execute(private_db, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
    props = connector_props(private_db)
    with TaskRunner(props) as run:
        run.wait_streaming()
        with private_db.connect(database=private_db.database, autocommit=False) as conn, conn.cursor() as cur:
            for i in range(3):
                cur.execute(f"INSERT INTO t VALUES ({i}, {i})")
            conn.commit()
        rows = run.wait_data(3)
    middle = rows[1]
    offset = dict(middle.source_offset)
    assert offset.get("event") == 1 and offset.get("server_id") == 1, f"the offset inside the transaction: {offset}"
    if not origin_matches:
        offset["server_id"] = 77
    offsets = MemoryOffsets()
    offsets.put(middle.source_partition, offset)
    with TaskRunner(props, offsets=offsets) as again:
        error = _stream_until_break(again, timeout=6)
        resumed = [r.value.get("after").get("id") for r in again.data()]
    if origin_matches:
        assert error is None and resumed == [2], f"the resume: {resumed}, {error}"
    else:
        assert error is not None and "written by server 77" in str(error), error
        assert resumed == [], f"rows of the transaction emitted before the stop: {resumed}"
        assert "snapshot.mode=when_needed" in str(error) and "\n" not in str(error)


@pytest.mark.integration  # a MariaDB of its own (its datadir is copied back), not the module's
@pytest.mark.parametrize("seed", [5, 8, 13])
def test_a_restore_from_a_backup_under_the_streaming_task_stops_it(seed: int) -> None:
    """A restore on the same server (same server_id, same host): a cold backup of the datadir, more
    changes the task reads, then the backup copied back and the server started again, and a new
    history written on it (a seeded number of changes, enough to pass the reader's position or
    not). The task reconnects to what looks like the same server; the positions and GTIDs it
    resumes from belong to the lost history. It must stop with the lineage error (or the server's
    own refusal of the position), never stream the new history on as if nothing happened."""
    import shutil
    import tempfile
    from pathlib import Path

    from tests.rig.mariadb import spawn_local

    rng = random.Random(seed)
    with spawn_local() as server, tempfile.TemporaryDirectory(prefix="cdc-restore-") as tmp:
        _admin(server, f"GRANT REPLICATION MASTER ADMIN ON *.* TO '{server.cdc_user}'@'%'", "CREATE DATABASE shop")
        db = replace(server, database="shop")
        execute(db, "CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (0, 0)")
        backup = Path(tmp) / "data"
        with TaskRunner(connector_props(db)) as run:
            run.wait_data(1)
            run.wait_streaming()
            read = rng.randint(1, 5)
            execute(db, *(f"UPDATE t SET v = {k + 1} WHERE id = 0" for k in range(read)))
            run.wait_data(1 + read)
            server.stop()
            shutil.copytree(server.datadir, backup)
            server.restart()
            lost = rng.randint(1, 8)  # read by the task, then undone by the restore
            execute(db, *(f"UPDATE t SET v = {read + k + 1} WHERE id = 0" for k in range(lost)))
            run.wait_data(1 + read + lost)
            server.stop()
            shutil.rmtree(server.datadir)
            shutil.copytree(backup, server.datadir)
            server.restart()
            new = rng.randint(1, 3 * lost)
            execute(db, *(f"UPDATE t SET v = {1000 + k} WHERE id = 0" for k in range(new)))
            error = _stream_until_break(run, timeout=30)
        versions = [r.value.get("after").get("v") for r in run.data() if r.value.get("after").get("id") == 0]
    assert error is not None, f"seed {seed}: the task streamed on across the restore: {versions}"
    message = str(error)
    assert "\n" not in message and "snapshot.mode=when_needed" in message, message
    # Either the lineage watch's line, or the server's refusal of a position inside an event of the new
    # binlog ("bogus data", "max_allowed_packet", which mislead), told as what it is: the file is there
    # but no longer holds what was read.
    assert "from a backup" in message and ("lineage changed" in message or "no longer holds" in message), message
    assert versions[: 1 + read + lost] == list(range(1 + read + lost)), f"seed {seed}: {versions}"
