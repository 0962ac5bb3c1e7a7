"""Issue 16, defect 3: the lake must follow the source across a change of binlog lineage.

The sink ranks MySQL events by binlog file number and position. A GTID switch-over to a
replica (whose binlog numbering is its own, here lower than the old primary's) or a RESET
MASTER (numbering restarts at 000001) makes new changes rank below the rows the lake already
holds, and an order guard that trusts positions alone would drop them. These tests run
`cdc run --until-caught-up` into Delta across such changes, with a seeded random workload of
many-row updates, deletes, inserts, re-inserted keys and primary-key changes on an INT-keyed
and a VARCHAR-keyed table, and require the lake to equal the source row for row (read with
deltalake, not the product's own reader), and `cdc verify` to agree.

Set CDC_FAILOVER_SEED to replay a workload; the seed is in every failure message.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.jobs.failover_support import (
    Workload,
    assert_lake_equals,
    create_tables,
    edit_job,
    point_job_at,
    run_until_caught_up,
    write_job,
)
from tests.rig import MariaDbServer
from tests.rig import mariadb_pair as pair_rig
from tests.rig._common import unavailable
from tests.rig.mariadb import local_binaries, spawn_local
from tests.support.proc import run_cdc

pytestmark = pytest.mark.slow  # several `cdc run`s, each starting Spark


def _seed() -> int:
    return int(os.environ.get("CDC_FAILOVER_SEED", random.randrange(1 << 30)))


def _file_number(position: tuple[str, int]) -> int:
    return int(position[0].rsplit(".", 1)[1])


# -- the tests ------------------------------------------------------------------------------------
def test_switch_over_to_a_gtid_replica_and_back(tmp_path: Path) -> None:
    """Snapshot the primary; switch over to the replica (binlog 000001 against the primary's
    000005) with changes on both sides of the switch; then switch back to the first server, whose
    binlog holds another mysql-bin.000001 under the stored file name.

    Three runs only (each starts Spark): the changes made on the primary before the switch reach
    the lake through the replica's binlog, where they were replicated under their own GTIDs.
    """
    seed = _seed()
    work = Workload(random.Random(seed))
    with pair_rig.spawn_pair() as pair:
        primary, replica = pair.primary, pair.replica
        with primary.connect(database=None) as conn, conn.cursor() as cur:
            for _ in range(4):  # the replica's binlog stays at 000001: its positions rank lower
                cur.execute("FLUSH BINARY LOGS")
        create_tables(primary)
        job = write_job(tmp_path, primary)
        run_until_caught_up(job, "snapshotting the primary", seed)
        assert_lake_equals(job, tmp_path, primary, "after the snapshot", seed, verify=False)

        # Switch-over: writes stop, the replica catches up, the primary goes away, the replica
        # takes writes and the job is pointed at it. Both sides change rows the lake holds.
        work.transactions(primary, 20)
        pair_rig.wait_caught_up(replica, primary)
        old_position = pair_rig.binlog_position(primary)
        primary.stop()
        pair_rig.promote(replica)
        assert _file_number(pair_rig.binlog_position(replica)) < _file_number(old_position), "test set-up"
        point_job_at(job, replica)
        work.transactions(replica, 20)
        run_until_caught_up(job, "after the switch-over to the replica", seed)
        assert_lake_equals(job, tmp_path, replica, "after the switch-over", seed)

        # And back: the old primary returns as a replica of the new one, catches up, takes over.
        primary.restart()
        pair_rig.replicate(primary, replica)
        pair_rig.wait_caught_up(primary, replica)
        with replica.connect(database=None) as conn, conn.cursor() as cur:
            cur.execute("SET GLOBAL read_only = ON")
        pair_rig.promote(primary)
        point_job_at(job, primary)
        work.transactions(primary, 15)
        run_until_caught_up(job, "after switching back to the first server", seed)
        assert_lake_equals(job, tmp_path, primary, "after switching back", seed)


@contextmanager
def _private_server() -> Iterator[MariaDbServer]:
    """A server of its own: RESET MASTER on the session's shared server would break other tests."""
    if local_binaries() is None:
        unavailable("RESET MASTER needs a private MariaDB from the local mariadbd and mariadb-install-db binaries")
    with spawn_local() as server:
        yield server


def _gtid_seq(server: MariaDbServer) -> int:
    with server.connect(database=None) as conn, conn.cursor() as cur:
        cur.execute("SELECT @@global.gtid_binlog_pos")
        pos = str(cur.fetchone()[0] or "")
    return max((int(g.rsplit("-", 1)[1]) for g in pos.split(",") if g), default=0)


def test_reset_master_restarts_the_binlog(tmp_path: Path) -> None:
    """RESET MASTER: binlog 000001 again and GTID sequence numbers from 1 again.

    More transactions follow the reset than the stored GTID position counts, so the stored GTID
    names a transaction of the new history: resuming "after" it would skip the first ones
    silently. Under the default snapshot.mode the run must either follow the source exactly or
    refuse with advice; with snapshot.mode=when_needed (the documented way to recover a lost
    binlog) the lake must end equal to the source.
    """
    seed = _seed()
    work = Workload(random.Random(seed))
    with _private_server() as server:
        with server.connect(database=None) as conn, conn.cursor() as cur:
            for _ in range(3):
                cur.execute("FLUSH BINARY LOGS")
        create_tables(server)
        job = write_job(tmp_path, server)
        work.transactions(server, 20)
        run_until_caught_up(job, "snapshotting", seed)
        assert_lake_equals(job, tmp_path, server, "before RESET MASTER", seed, verify=False)

        stored_seq = _gtid_seq(server)
        with server.connect(database=None) as conn, conn.cursor() as cur:
            cur.execute("RESET MASTER")
        work.transactions(server, stored_seq + 10)
        assert _gtid_seq(server) > stored_seq, "test set-up: the new history must pass the stored GTID"

        res = run_cdc("run", str(job), "--until-caught-up", timeout=300)
        if res.returncode == 0:
            assert_lake_equals(job, tmp_path, server, "after RESET MASTER (snapshot.mode=initial)", seed)
            return
        last = res.stderr.strip().splitlines()[-1] if res.stderr.strip() else ""
        assert "snapshot" in last and "Traceback" not in res.stderr[-3000:], (
            f"seed {seed}: after RESET MASTER the run refused without one line of advice:\n{res.stderr[-4000:]}"
        )
        edit_job(job, **{"snapshot.mode": "when_needed"})
        run_until_caught_up(job, "after RESET MASTER with snapshot.mode=when_needed", seed)
        assert_lake_equals(job, tmp_path, server, "after RESET MASTER (snapshot.mode=when_needed)", seed)


def test_reset_master_while_the_job_streams_stops_it_and_a_new_snapshot_makes_the_lake_equal(tmp_path: Path) -> None:
    """Issue 31: a RESET MASTER *while* `cdc run` streams. Before, the reader went on from its old
    position in the new binlog: the changes written below it never arrived and the job ran on.
    Now the connector sees the break (lineage_watch.py) and the run stops with one line naming it
    and snapshot.mode=when_needed; with that mode the next run takes a new snapshot and the lake
    (read with deltalake) equals the source. The seed varies the changes before and after the
    reset, an idle pause after it, and a rotation."""
    from tests.support.proc import CdcProcess, wait_for

    seed = _seed()
    rng = random.Random(seed)
    work = Workload(random.Random(seed))
    with _private_server() as server:
        create_tables(server)
        job = write_job(tmp_path, server)
        run_until_caught_up(job, "snapshotting", seed)
        run = CdcProcess("run", str(job), log_path=tmp_path / "streaming.log")
        try:
            wait_for(lambda: "Streaming binlog from" in run.output(), 120, "streaming to start", run)
            work.transactions(server, rng.randint(0, 15))
            with server.connect(database=None) as conn, conn.cursor() as cur:
                cur.execute("RESET MASTER")
            if rng.random() < 0.5:
                time.sleep(rng.uniform(0.5, 3.0))  # idle: the periodic check, not a GTID, finds it
            work.transactions(server, rng.randint(1, 15))
            if rng.random() < 0.5:
                with server.connect(database=None) as conn, conn.cursor() as cur:
                    cur.execute("FLUSH BINARY LOGS")
                work.transactions(server, rng.randint(1, 5))
            deadline = time.monotonic() + 120
            while run.alive() and time.monotonic() < deadline:
                time.sleep(0.2)
            assert not run.alive(), f"seed {seed}: the job streamed on after RESET MASTER:\n{run.output()[-3000:]}"
            code = run.proc.returncode
        finally:
            if run.alive():
                run.kill9()
        output = run.output()
        assert code != 0, f"seed {seed}: the job ended with 0 after RESET MASTER:\n{output[-3000:]}"
        assert "snapshot.mode=when_needed" in output and "RESET MASTER" in output, (
            f"seed {seed}: the stop does not say what happened and what to do:\n{output[-3000:]}"
        )
        ends = [line for line in output.splitlines() if line.startswith("error: ")]
        assert ends and "Traceback" not in ends[-1] and "snapshot.mode=when_needed" in ends[-1], (
            f"seed {seed}: the last line is not the advice: {ends[-1:]}"
        )
        edit_job(job, **{"snapshot.mode": "when_needed"})
        run_until_caught_up(job, "after the stop, with snapshot.mode=when_needed", seed)
        assert_lake_equals(job, tmp_path, server, "after RESET MASTER while streaming", seed)
