"""An incremental snapshot of a large table under a full-speed writer: streaming delays and the lake (issue 22).

Run: `python benchmarks/incremental_snapshot.py [--rows 1000000] [--chunk 4096]` (at 1M rows and chunk
4096 about 35 minutes on 2 shared cores, far over the two minutes of the other benchmarks; `--rows 50000`
takes about three). Needs the mariadbd binaries the test rig uses, or CDC_TEST_MYSQL_URL. Prints one
JSON line per figure (see benchmarks/_common.py); progress goes to stderr.

- A private MariaDB; table `t` (INT key, BIGINT, VARCHAR, DECIMAL, DOUBLE, TINYINT(1), DATE,
  DATETIME(6), TEXT, VARBINARY) filled with N rows server-side (tests/jobs/snapshot_under_load.py).
- Baseline: a bare streaming `SELECT *` of `t` (PyMySQL SSCursor, fetchmany), before and after.
- `cdc run` (a subprocess, as a user runs it): MySQL connector from the binlog position at its start
  (snapshot.mode=no_data), embedded log, Spark, Delta with delete.mode=soft. A writer thread
  updates, deletes and re-inserts random ids, one autocommit statement each at full speed, every
  row stamped with its op number and its commit wall time. `--warmup` seconds later
  `cdc signal job.yaml execute-snapshot --tables <db>.t` starts the incremental snapshot (chunks of
  incremental.snapshot.chunk.size, 1024 by default); `--tail` seconds after the stored offset says
  it is read, the writer stops; the run stops once the lake caught up.
- Delay of a streamed change: from its commit (the stamp) to the first Delta commit whose rows show
  it or a later change of its key, read from the lake itself (each commit's added files in
  `_delta_log` order, with pyarrow): the lake is the stronger check, as it includes the log, Spark's
  trigger (2 s) and the MERGE. delete.mode=soft keeps a deleted row with its last op number, so a
  delete is as visible as an update. "before" = changes committed in the warm-up (before the signal),
  "during" = between the signal and the Delta commit holding every id, "after" = from that commit on
  (the tail, `--tail`, 60 s by default, with the lake at its full size). Each figure is printed as
  during against after and before against after: "after" separates what the snapshot costs from
  what a MERGE into a table of N rows costs anyway (the warm-up's table is small).
- MERGE seconds per Delta commit (delta-rs's operationMetrics in the Delta log), before/during/after
  as above; stderr also gives per phase the MERGEs, their mean/max seconds, the unchanged rows each
  rewrote (copy-on-write: a file holding one changed row is rewritten whole) and the lake's rows.
- Snapshot rows/s: N over signal → the stored offset without the snapshot (source side), and over
  signal → every id in the lake (end to end), each against the bare SELECT's rows/s.
- Finally the lake equals the table: every live row of the Delta table (deltalake) against
  `SELECT *`, every column; a key whose lake state went back to an older change is reported too.

Also: the delay from each change's commit to its append to the embedded log (the record timestamp
the producer stamps), source side only, during = signal → the task's "Incremental snapshot
completed" line, before and after on either side of it.

Figures up to 2026-11-27 03:00 below were printed as during against "outside" (before and after
together).

Measured 2026-11-26 on 2 cores shared with up to 7 other helpers' test runs and Spark sessions
(load average 11-26: the process gets a fraction of a core), so every figure is noisy; compare the
ratios of one run. The lake equalled the table every time (no difference, no key going back).

- 50k rows, chunk 1024, load 13: snapshot 454 rows/s (0.014 of the bare SELECT's 32.7k), 439 rows/s
  into the lake; delay into the lake p50/p99/max 6.5/12.2/13.6 s during vs 4.3/8.2/8.4 s outside
  (1.5x); into the log 1.5/3.3/4.0 s during vs 0.06/1.2/1.3 s outside; the writer 72 vs 97 changes/s.
- 50k rows, chunk 1024, load 22-26 (py-spy attached for 40 s): 303 rows/s (0.021 of 14.3k); lake
  10.7/24.3/25.9 s vs 6.6/8.9/9.0 s; log 2.6/6.5/7.2 s vs 0.11/0.89/1.0 s.
- 1M rows, `--chunk 4096` (245 chunks; at the default 1024 the run would not have fit the hour it had), load
  20-26, 137k writer changes in 27 minutes: snapshot 633 rows/s (0.027 of the bare SELECT's 23.9k),
  626 rows/s into the lake; delay into the lake p50/p99/max 17.7/36.9/47.2 s during vs 9.1/16.3/16.6 s
  outside (1.9x/2.3x/2.9x); into the log 4.6/19.7/25.9 s during vs 0.05/0.61/0.75 s outside; the
  writer 85 vs 60 changes/s (outside is mostly the warm-up, beside Spark's first batches). 202 Delta
  commits; the lake equalled the table, all 1M rows and every column.

Issue 22's "no streamed change delayed by more than a few seconds during the snapshot" does not
hold on this machine: the log alone holds changes back by up to 26 s at 1M rows (chunk 4096) and 4-7 s
at 50k rows (chunk 1024), against under a second outside the snapshot.

So a streamed change waits about one chunk's round (1.5-3 s here) before it is in the log while the
snapshot runs, and the lake adds Spark's trigger and MERGEs that grow with the snapshot rows in
each batch (5-9 s per batch during it, 1-2 s outside). A chunk costs 2-3 s on this loaded machine
although its SELECT is milliseconds: py-spy of `cdc run` shows the embedded log's COMMIT (the
JsonConverter records with schemas are 4.1 KB each, and the log's WITHOUT ROWID `records` table
keeps each in a 16 KB overflow page: 1.07 GB for 59k records), the conversion, the binlog's
TableMapEvent parsing and the sink's Python in the same process sharing the GIL.

Where a chunk's time went (2026-11-27, 200k rows, chunk 1024, load 5-11; a 5 ms stack sampler in `cdc run`
and the DEBUG line cdc_mysql.incremental logs per chunk): the task thread, which also reads the binlog,
spent 34% of the snapshot inside the chunk read (20% waiting for the two watermark INSERTs to commit, 10%
decoding the SELECT's rows), 16% waiting for the log writer, 9% emitting the rows; per chunk: low
watermark 1-75 ms, SELECT 11-150 ms, rows 2-50 ms, high watermark 1-58 ms, high watermark seen in the
binlog 20-770 ms later, rows emitted in 5-290 ms. The binlog was not read while the chunk was, and a poll
batch often took two chunks. Now the watermarks and SELECT run on a chunk thread, the next chunk waits
until the last one's rows were taken by a poll, and the rows share one source block: the task thread is
in the chunk read 2% of the time and waits for the embedded log's writer (busy 56%) 38%: the log's
commit is the limit now, not the snapshot.

Before/after that change, back to back, MariaDB, chunk 1024, the lake equal to the table every time:

- 200k rows, load 9 then 5: snapshot 4812 -> 5108 rows/s; into the log p50/p99/max during the
  snapshot 274/564/706 -> 142/507/572 ms (outside 8/408/658 and 5/280/360 ms); into the lake
  4.2/7.2/7.8 -> 3.8/9.5/9.6 s (outside 1.8/3.2/3.4 and 1.5/2.8/3.0 s); writer 261 -> 285 changes/s.
- 1M rows, load 1-13 then 5-10: snapshot 4856 -> 4902 rows/s (0.041 -> 0.037 of the bare SELECT)
  while the writer streamed 249 -> 996 changes/s during it; into the log 281/982/1567 -> 254/689/818 ms
  (outside 5/548/1113 and 6/264/461 ms); into the lake 5.2/26.5/28.2 -> 3.0/12.9/16.9 s (outside
  1.6/6.7/7.8 and 1.7/4.3/5.1 s). The lake's remaining excess is Spark's trigger and MERGEs growing
  with the snapshot rows in a batch.

Before/during/after, 2026-11-27 03:50-04:20 (load 1-4), 1M rows, chunk 1024, two runs each, alternated;
the lake equalled the table every time. Into the lake p50/p99/max during 3.7/8.5/9.6 and 5.0/10.1/11.0 s,
after 2.3/3.9/4.1 and 2.1/3.6/3.8 s, before (small lake) 1.5/2.7/3.0 and 1.5/2.8/2.9 s; into the log
during 0.17/0.85/1.07 and 0.11/0.50/0.65 s. The MERGE is not what the snapshot adds: delta-rs keeps the
table in one file and rewrites it whole for the writer's scattered keys (~1M unchanged rows copied for
0.4-2.5k changed), so a MERGE grows with the lake (0.05 s at 20k rows, 0.4 s at 120k, 0.8 s at 330k-800k,
1.0-1.4 s at 1M) and costs as much after the snapshot (1.04-1.10 s mean) as at its end. What the snapshot
adds is the rest of each batch: 16-22k events (its rows) instead of 0.6-1.3k, so `collect` 0.7-1.1 s and
`flatten` 1.0-1.1 s mean (max 2.4-3.2 s): Python row by row, as the Arrow path declines every batch of a
table with a FLOAT/DOUBLE column (decode/columns.py). Batches of 2.5-3.1 s mean (max 5-6 s) then run back
to back behind the 2 s trigger. With DOUBLE read by the Arrow path (measured as a patch in between; in
the code since 7aebb42): during 2.9/4.7/5.4 and 3.0/5.6/6.1 s (after 2.2/3.6/4.0 and 2.2/3.6/4.0 s), flatten 0.21 s mean
(max 0.47), batches 1.8 s mean (max 2.9-3.0).

With the writer at full speed on a quiet machine (single-row transactions, 2.3-2.5k/s) the source itself
fell behind (2026-11-27 morning, 200k rows: into the log during 5.7/9.8/10.0 s, the snapshot at 830
rows/s, since each chunk waits for the stream to reach its high watermark). `--profile` now also gives
each thread's CPU seconds: the task thread was on a CPU 88% of the time, and a cProfile of single-row
transactions showed half of it in python-mysql-replication parsing the same TABLE_MAP again for every
transaction. With that parse skipped when the bytes repeat (cdc_mysql/table_map_reuse.py) and the log
transactions grouped behind a busy commit, 2026-11-27 07:00-07:10, load 0.4-1.6, chunk 1024, writer
closed-loop at full speed (1.2-1.8k changes/s; it shares the 2 cores with everything else):

- 200k rows: snapshot read in 27.9 s (7.2k rows/s, was 830); into the lake p50/p99/max before
  1.65/3.05/3.33 s, during 2.87/4.53/4.66 s, after 1.68/2.97/3.15 s; into the log during
  0.22/0.61/0.75 s (after 0.002/0.25/1.0 s). The task thread on a CPU 54 s of 124 s.
- 1M rows: snapshot read in 118 s (8.4k rows/s); into the lake before 1.55/2.79/3.01 s, during
  3.83/5.86/6.42 s, after 2.18/3.63/4.10 s (MERGE 0.70 s mean during, 1.03 s after: the one-file lake
  rewritten whole); into the log during 0.21/0.66/0.83 s (after 0.003/0.17/0.35 s).

Both runs: the lake equalled the table (every column, no key going back).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import emit, emit_throughput, note

from tests.jobs.snapshot_under_load import (
    TABLE,
    create_table,
    differences,
    lake_delays,
    lake_path,
    lake_rows,
    log_delays,
    run_scenario,
    table_rows,
)
from tests.rig import mariadb as mariadb_rig


def _bare_select(server: object, rows_hint: int) -> float:
    """Seconds for a streaming SELECT * of `t` (PyMySQL SSCursor, fetchmany), as the chunks' reads."""
    import pymysql.cursors

    t0 = time.perf_counter()
    conn = server.connect(cursorclass=pymysql.cursors.SSCursor)  # type: ignore[attr-defined]
    n = 0
    with conn.cursor() as cur:
        cur.execute(f"SELECT * FROM {TABLE}")
        while batch := cur.fetchmany(10240):
            n += len(batch)
    conn.close()
    if n < rows_hint // 2:
        raise RuntimeError(f"bare SELECT returned {n} rows, expected about {rows_hint}")
    return time.perf_counter() - t0


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _phases(stamped: list[tuple[float, float]], per_unit: float, start: float, end: float) -> list[list[float]]:
    """The values of (stamp, value) pairs before `start`, in [start, end) and from `end` on (stamps
    divided by `per_unit` are in the unit of start and end)."""
    parts: list[list[float]] = [[], [], []]
    for stamp, value in stamped:
        at = stamp / per_unit
        parts[0 if at < start else 1 if at < end else 2].append(value)
    return parts


def _emit_phases(what: str, before: list[float], during: list[float], after: list[float]) -> None:
    """p50/p99/max during the snapshot against after it (the lake as large), and before it against after."""
    for label, q in (("p50", 0.5), ("p99", 0.99), ("max", 1.0)):
        emit(f"incremental_snapshot.{what}_{label}_during_vs_after [ms, lower is better]",
             _pct(during, q), "ms", _pct(after, q))  # fmt: skip
    for label, q in (("p50", 0.5), ("p99", 0.99), ("max", 1.0)):
        emit(f"incremental_snapshot.{what}_{label}_before_vs_after [ms, lower is better]",
             _pct(before, q), "ms", _pct(after, q))  # fmt: skip


def _merges(path: str) -> list[tuple[int, float, int, int]]:
    """(commit ms, MERGE ms, unchanged rows rewritten, rows in the table after it) per MERGE commit,
    from delta-rs's operationMetrics in the Delta log."""
    rows: dict[str, int] = {}
    out = []
    for f in sorted((Path(path) / "_delta_log").glob("*.json")):
        info: dict = {}
        for line in f.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                rows[action["add"]["path"]] = json.loads(action["add"].get("stats") or "{}").get("numRecords", 0)
            elif "remove" in action:
                rows.pop(action["remove"]["path"], None)
            elif "commitInfo" in action:
                info = action["commitInfo"]
        m = info.get("operationMetrics") or {}
        if info.get("operation") == "MERGE" and "execution_time_ms" in m:
            out.append((int(info["timestamp"]), float(m["execution_time_ms"]), int(m.get("num_target_rows_copied", 0)),
                        sum(rows.values())))  # fmt: skip
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=22)
    ap.add_argument("--chunk", type=int, default=None, help="incremental.snapshot.chunk.size (default 1024)")
    ap.add_argument("--warmup", type=float, default=30.0, help="seconds of writes before the signal")
    ap.add_argument("--tail", type=float, default=60.0, help="seconds of writes after the snapshot is read")
    ap.add_argument("--keep", action="store_true", help="keep the job's state and lake (path on stderr)")
    ap.add_argument(
        "--profile",
        action="store_true",
        help="sample every thread's Python stack in `cdc run` (e2e_lag.py's sampler), summary on stderr",
    )
    args = ap.parse_args()
    n = args.rows

    with mariadb_rig.provide() as root, root.fresh_database() as server:
        t0 = time.perf_counter()
        create_table(server, n)
        note(f"MariaDB on port {server.port}: {n} rows filled in {time.perf_counter() - t0:.1f}s")
        bare = _bare_select(server, n)
        note(f"bare SELECT: {n / bare:.0f} rows/s")

        tmp = Path(tempfile.mkdtemp(prefix="cdc-bench-isnap-"))
        note(f"job state and lake in {tmp}")
        process = None
        if args.profile:
            from e2e_lag import ProfiledJob, profile_summary

            def process(*job_args: str, log_path: Path) -> ProfiledJob:
                return ProfiledJob(*job_args, log_path=log_path, profile_path=tmp / "profile.json")

        run = run_scenario(tmp, server, n, args.seed, delete_mode="soft", chunk=args.chunk, warmup_s=args.warmup,
                           tail_s=args.tail, timeout_s=3600, note=note, process=process)  # fmt: skip
        if args.profile:
            profile_summary(tmp / "profile.json", top=8)
        bare = min(bare, _bare_select(server, n))

        note("replaying the Delta log for the delays ...")
        vis = lake_delays(lake_path(tmp), run.ops, n)
        lake_done_ms = next((ts for ts, keys in vis.keys_per_version if keys >= n), None)
        if lake_done_ms is None:
            raise RuntimeError("no Delta commit held every id: the snapshot never completed in the lake")
        signal_ms, lake_done_s = run.signal_s * 1000, lake_done_ms / 1000
        before, during, after = _phases(vis.delays_ms, 1000, signal_ms, lake_done_ms)
        ops_during = sum(1 for op in run.ops if signal_ms <= op.stamp_us / 1000 < lake_done_ms)
        span_during = min(lake_done_s, run.writer_stop_s) - run.signal_s
        span_outside = (run.signal_s - run.stream_live_s) + max(0.0, run.writer_stop_s - lake_done_s)

        emit_throughput("incremental_snapshot.source_read", n, run.done_s - run.signal_s, bare, "rows/s")
        emit_throughput("incremental_snapshot.into_lake", n, lake_done_s - run.signal_s, bare, "rows/s")
        _emit_phases("delay", before, during, after)
        # The MERGE of the batch that brought the last ids is the snapshot's (its commit is lake_done_ms).
        merges = _phases([(ts, m) for ts, *m in _merges(lake_path(tmp))], 1, signal_ms, lake_done_ms + 1)
        _emit_phases("merge", *([ms for ms, _, _ in part] for part in merges))
        for name, part in zip(("before", "during", "after"), merges, strict=True):
            if part:
                mean_s, max_s = statistics.fmean(m[0] for m in part) / 1000, max(m[0] for m in part) / 1000
                copied = statistics.fmean(m[1] for m in part)
                note(f"{name}: {len(part)} MERGEs, {mean_s:.2f} s each (max {max_s:.2f}), rewriting {copied:.0f} "
                     f"unchanged rows each; lake {part[-1][2]} rows")  # fmt: skip
        note("reading the streamed changes' append times from the embedded log ...")
        in_log, _ = log_delays(tmp, server.database, run.ops)
        _emit_phases("log_delay", *_phases(in_log, 1e6, run.signal_s, run.done_s))
        emit("incremental_snapshot.writer_during_vs_outside [changes/s, higher is better]",
             ops_during / max(span_during, 1e-9), "changes/s",
             (len(run.ops) - ops_during) / max(span_outside, 1e-9))  # fmt: skip
        note(f"{len(run.ops)} changes ({len(before)} before the snapshot, {len(during)} during, {len(after)} after); "
             f"mean delay {statistics.fmean(before or [0]):.0f} / {statistics.fmean(during or [0]):.0f} / "
             f"{statistics.fmean(after or [0]):.0f} ms; {len(vis.keys_per_version)} Delta commits")  # fmt: skip

        note("comparing the lake with the table ...")
        diff = differences(table_rows(server), lake_rows(lake_path(tmp)))
        ok = not diff and not vis.regressions and not vis.unseen
        print(json.dumps({"metric": "incremental_snapshot.lake_equals_table", "value": ok, "rows": n,
                          "changes": len(run.ops), "differences": diff, "regressions": vis.regressions[:10],
                          "never_visible": [vars(op) for op in vis.unseen[:10]]}), flush=True)  # fmt: skip
        if not args.keep:
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)
        if not ok:
            sys.exit(1)


if __name__ == "__main__":
    threading.current_thread().name = "bench"
    main()
