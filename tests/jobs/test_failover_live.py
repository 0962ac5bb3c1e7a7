"""Issue 31: a failover *under* a streaming `cdc run`, the way production moves a connection.

tests/jobs/test_failover.py switches `database.hostname/port` between runs. Here the job's
connections go through a TCP proxy (tests/support/tcp_proxy.py, a stand-in for a VIP, a DNS
name or ProxySQL) and stay pointed at it: the switch-over moves the proxy, which drops the
connector's binlog and query connections in the middle of its stream, and the reconnect reaches
another server. A writer thread commits a seeded workload (many-row updates, deletes, inserts,
re-inserted keys, primary-key changes on an INT- and a VARCHAR-keyed table) all along.

- A planned switch-over (writes stop, the replica catches up, MASTER_GTID_WAIT, promotion, the
  proxy moves, writes resume on the new primary): the job must stream on across it and the lake
  (read with deltalake) must end equal to the new primary, row for row.
- A failover to a replica that did not catch up (the old primary committed transactions the
  connector read but the replica never got): the connector must not go on silently. The README
  promises a stop with one line naming `snapshot.mode=when_needed`; a run with that mode then
  takes a new snapshot on a new epoch and the lake ends equal to the new primary.

The seed is printed; CDC_TEST_SEED replays its workload and its choices (timing still varies).
"""

from __future__ import annotations

import os
import random
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from tests.jobs.failover_support import (
    TABLES,
    Workload,
    assert_lake_equals,
    create_tables,
    differences,
    edit_job,
    lake_rows,
    run_until_caught_up,
    source_rows,
    write_job,
)
from tests.rig import MariaDbServer
from tests.rig import mariadb_pair as pair_rig
from tests.support.proc import CdcProcess, wait_for
from tests.support.tcp_proxy import TcpProxy

pytestmark = [pytest.mark.e2e, pytest.mark.slow]  # two MariaDB servers, a background `cdc run` and Spark


def _seed() -> int:
    seed = int(os.environ.get("CDC_TEST_SEED") or random.SystemRandom().randrange(1 << 30))
    print(f"CDC_TEST_SEED={seed}")
    return seed


class Writer(threading.Thread):
    """Commits the seeded Workload to `target` in small batches with short seeded pauses.

    `write(total)` lets it run until `total` transactions are committed since it started and
    waits for that; between calls it is idle, so the test can switch servers while nothing is
    written. The changes depend on the seed only, not on timing: each batch re-reads the keys.
    """

    def __init__(self, work: Workload, rng: random.Random, target: MariaDbServer) -> None:
        super().__init__(name="failover-writer", daemon=True)
        self.work, self.rng, self.target = work, rng, target
        self.done = 0
        self.error: BaseException | None = None
        self._limit = 0
        self._stopping = False
        self._cond = threading.Condition()

    def run(self) -> None:
        try:
            while True:
                with self._cond:
                    self._cond.wait_for(lambda: self._stopping or self.done < self._limit)
                    if self._stopping:
                        return
                    target, n = self.target, min(self.rng.randint(1, 4), self._limit - self.done)
                self.work.transactions(target, n)
                with self._cond:
                    self.done += n
                    self._cond.notify_all()
                time.sleep(self.rng.uniform(0, 0.05))
        except BaseException as e:  # reported by write()
            with self._cond:
                self.error = e
                self._cond.notify_all()

    def write(self, total: int, wait: bool = True, timeout: float = 120) -> None:
        with self._cond:
            self._limit = max(self._limit, total)
            self._cond.notify_all()
            if wait:
                reached = self._cond.wait_for(lambda: self.error is not None or self.done >= total, timeout)
                assert self.error is None, f"the writer failed: {self.error!r}"
                assert reached, f"the writer committed {self.done} of {total} transactions in {timeout:.0f}s"

    def stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self.join(10)


def _lake_equals(tmp_path: Path, server: MariaDbServer) -> bool:
    try:
        return not any(differences(source_rows(server, t), lake_rows(tmp_path / "lake", t)) for t in TABLES)
    except Exception:  # no table yet, or a commit in flight: not equal yet
        return False


def _admin(server: MariaDbServer, *statements: str) -> None:
    with server.connect(database=None) as conn, conn.cursor() as cur:
        for statement in statements:
            cur.execute(statement)


def _gtid_pos(server: MariaDbServer) -> str:
    with server.connect(database=None) as conn, conn.cursor() as cur:
        cur.execute("SELECT @@global.gtid_binlog_pos")
        return str(cur.fetchone()[0] or "")


def _seq(gtid_pos: str) -> int:
    """The sequence number of domain 0 in a MariaDB GTID position (the rig's servers use only domain 0)."""
    return max((int(g.rsplit("-", 1)[1]) for g in gtid_pos.split(",") if g.startswith("0-")), default=0)


def _start(tmp_path: Path, pair: pair_rig.GtidPair, proxy: TcpProxy, rng: random.Random) -> Path:
    """The tables on the primary (after a few rotations, for some seeds: then the stored binlog
    file names are not on the replica), replicated; the job, whose source is the proxy."""
    if rng.random() < 0.5:
        _admin(pair.primary, *["FLUSH BINARY LOGS"] * 3)
    create_tables(pair.primary)
    pair_rig.wait_caught_up(pair.replica, pair.primary)
    through_proxy = replace(pair.primary, host=proxy.listen_host, port=proxy.port)
    return write_job(tmp_path, through_proxy)


def test_switch_over_under_a_streaming_job_through_a_moved_proxy(tmp_path: Path) -> None:
    seed = _seed()
    rng = random.Random(seed)
    with pair_rig.spawn_pair() as pair, TcpProxy(pair.primary.host, pair.primary.port) as proxy:
        primary, replica = pair.primary, pair.replica
        job = _start(tmp_path, pair, proxy, rng)
        writer = Writer(Workload(random.Random(seed)), random.Random(seed + 1), primary)
        writer.start()
        run = CdcProcess("run", str(job), log_path=tmp_path / "run.log")
        try:
            before, after = rng.randint(10, 40), rng.randint(10, 40)
            if rng.random() < 0.5:  # some of the changes while the job starts and snapshots
                writer.write(rng.randint(1, before), wait=False)
            wait_for(lambda: "Streaming binlog from" in run.output(), 180, "streaming to start", run)
            writer.write(before)
            if rng.random() < 0.5:  # the job has read and applied everything: the switch finds it idle
                wait_for(lambda: _lake_equals(tmp_path, primary), 90, "the lake to equal the primary", run)

            # The switch-over: writes stopped, the replica catches up, the primary goes read-only,
            # the replica is promoted, the address moves (dropping the job's connections), writes resume.
            caught_up_at = pair_rig.wait_caught_up(replica, primary)
            _admin(primary, "SET GLOBAL read_only = ON")
            pair_rig.promote(replica)
            time.sleep(rng.uniform(0, 1.5))
            dropped = proxy.redirect(replica.host, replica.port)
            writer.target = replica
            writer.write(before + after)
            assert _gtid_pos(replica) != caught_up_at, "test set-up: the new primary took writes"

            wait_for(lambda: "server_id=1 -> server_id=2" in run.output(), 60, "the reconnect to the replica", run)
            wait_for(lambda: _lake_equals(tmp_path, replica), 120, "the lake to equal the new primary", run)
            assert run.alive(), f"seed {seed}: the job stopped:\n{run.output()[-4000:]}"
            assert dropped >= 1, f"seed {seed}: the redirect dropped no connection of the job"
        except AssertionError as e:
            raise AssertionError(f"seed {seed}: {e}\n--- cdc run log ---\n{run.output()[-4000:]}") from None
        finally:
            writer.stop()
            run.terminate(60)
        assert writer.error is None, f"seed {seed}: the writer failed: {writer.error!r}"

        # A last run through the proxy (still at the new primary) finds nothing left to do.
        run_until_caught_up(job, "after the switch-over", seed)
        assert_lake_equals(job, tmp_path, replica, "after the switch-over under the streaming job", seed)


def test_failover_to_a_replica_that_missed_transactions_stops_the_streaming_job(tmp_path: Path) -> None:
    seed = _seed()
    rng = random.Random(seed)
    with pair_rig.spawn_pair() as pair, TcpProxy(pair.primary.host, pair.primary.port) as proxy:
        primary, replica = pair.primary, pair.replica
        job = _start(tmp_path, pair, proxy, rng)
        writer = Writer(Workload(random.Random(seed)), random.Random(seed + 1), primary)
        writer.start()
        run = CdcProcess("run", str(job), log_path=tmp_path / "run.log")
        try:
            before, lost = rng.randint(5, 30), rng.randint(1, 12)
            # Transactions on the new primary before the address moves (it takes writes at once;
            # the move lags) and after: with enough of them its GTID sequence passes the stored one.
            early, late = rng.randint(0, lost + 5), rng.randint(0, 10)
            wait_for(lambda: "Streaming binlog from" in run.output(), 180, "streaming to start", run)
            writer.write(before)
            pair_rig.wait_caught_up(replica, primary)
            _admin(replica, "STOP SLAVE")  # the replica falls behind from here
            writer.write(before + lost)
            # The job has read (and applied) the transactions the replica will never have.
            wait_for(lambda: _lake_equals(tmp_path, primary), 120, "the lake to equal the primary", run)
            stored_pos = _gtid_pos(primary)
            assert _seq(_gtid_pos(replica)) < _seq(stored_pos), "test set-up: the replica misses transactions"

            _admin(primary, "SET GLOBAL read_only = ON")
            pair_rig.promote(replica)
            writer.target = replica
            writer.write(before + lost + early)
            proxy.redirect(replica.host, replica.port)
            writer.write(before + lost + early + late)

            deadline = time.monotonic() + 90
            while run.alive() and time.monotonic() < deadline:
                time.sleep(0.2)
            output = run.output()
            assert not run.alive(), "the job streamed on after a failover that lost transactions it had read"
            assert run.proc.returncode != 0, f"the job ended with {run.proc.returncode} after the failover"
            assert "snapshot.mode=when_needed" in output, "the stop does not name snapshot.mode=when_needed"
        except AssertionError as e:
            raise AssertionError(
                f"seed {seed} (lost {lost}, early {early}, late {late}, primary at {_gtid_pos(primary)}, "
                f"new primary at {_gtid_pos(replica)}): {e}\n--- cdc run log ---\n{run.output()[-4000:]}"
            ) from None
        finally:
            writer.stop()
            run.terminate(60)  # a run that streamed on; or, once exited, only closes its log
        assert writer.error is None, f"seed {seed}: the writer failed: {writer.error!r}"
        print(f"stopped: read up to {stored_pos}; new primary at {_gtid_pos(replica)}")

        # What the README promises next: snapshot.mode=when_needed takes a new snapshot on a new
        # epoch, and the lake (which holds the lost transactions' rows) ends equal to the new primary.
        edit_job(job, **{"snapshot.mode": "when_needed"})
        run_until_caught_up(job, f"with snapshot.mode=when_needed after the failover (lost {lost})", seed)
        assert_lake_equals(job, tmp_path, replica, "after the lossy failover and a new snapshot", seed, verify=False)
