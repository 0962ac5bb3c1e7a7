"""The MySQL-to-lake demo (`make demo`): a private MariaDB shop streamed into Delta tables in ./lake.

1. checks for Java (Spark) and MariaDB's binaries, and starts a private MariaDB with the binlog
   set up for CDC, holding the sample shop (examples/demo/shop.sql);
2. `cdc run examples/mysql-to-lake.yaml --until-caught-up`: the initial snapshot lands in ./lake;
3. the load generator: inserts, updates, deletes, primary-key changes and an ALTER TABLE;
4. `cdc run … --until-caught-up` again: the binlog changes stream into the same tables;
5. `cdc verify`: source and lake compared row by row (exit 1 on any difference);
6. `cdc status` (counts, positions, lag) and a sample of the lake.

The MariaDB server lives in a temporary directory and stops at the end; ./lake and the job's
state (.cdc/shop) stay for a look around, and are replaced by the next run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
JOB = "examples/mysql-to-lake.yaml"
LAKE, STATE = ROOT / "lake", ROOT / ".cdc" / "shop"

sys.path.insert(0, str(ROOT))


def step(text: str) -> None:
    print(f"\n==> {text}", flush=True)


def die(text: str) -> None:
    print(f"\ndemo: {text}", file=sys.stderr, flush=True)
    sys.exit(1)


def check_prerequisites() -> None:
    from tests.rig.mariadb import local_binaries

    java = shutil.which("java")
    if java is None or subprocess.run([java, "-version"], capture_output=True).returncode != 0:
        die("Java is missing: Spark needs a JVM. Install one (apt-get install openjdk-17-jre-headless) and rerun.")
    if local_binaries() is None:
        die("MariaDB is missing: the demo starts a private server. Install it (apt-get install mariadb-server).")


def cdc(*args: str, check: bool = True) -> int:
    exe = Path(sys.executable).with_name("cdc")
    argv = [str(exe) if exe.exists() else "cdc", *args]
    print("$ " + " ".join(["cdc", *args]), flush=True)
    rc = subprocess.run(argv, cwd=ROOT).returncode
    if check and rc != 0:
        die(f"`cdc {' '.join(args)}` exited {rc}; its messages above say why")
    return rc


def show_sample(table: str, limit: int = 5) -> None:
    from deltalake import DeltaTable

    from cdc_spark.apply.arrowutil import delta_dataset  # deltalake's own reader can abort the exit

    path = str(LAKE / table)
    rows = [r for r in delta_dataset(DeltaTable(path), path).to_table().to_pylist() if not r.get("__deleted")]
    rows.sort(key=lambda r: (r.get("id") is None, r.get("id") or 0))
    columns = [c for c in (rows[0] if rows else {}) if not c.startswith("__")]
    print(f"lake/{table}: {len(rows)} rows; the first {min(limit, len(rows))}:")
    shown = [[("NULL" if r[c] is None else str(r[c])) for c in columns] for r in rows[:limit]]
    widths = [max(len(c), *(len(row[i]) for row in shown)) for i, c in enumerate(columns)]
    print("  " + "  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)))
    for row in shown:
        print("  " + "  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)))


def main() -> None:
    started = time.monotonic()
    check_prerequisites()
    from examples.demo import loadgen
    from tests.rig.mariadb import spawn_local

    step("creating the environment: a fresh ./lake and job state")
    for path in (LAKE, STATE):
        shutil.rmtree(path, ignore_errors=True)

    step("starting a private MariaDB (binlog_format=ROW, binlog_row_metadata=FULL, GTID)")
    with spawn_local() as server:
        print(f"MariaDB on {server.host}:{server.port}, data in {server.datadir}")
        loadgen.create_shop(server.host, server.port, server.user, server.password, "shop")
        os.environ.update(
            SHOP_MYSQL_HOST=server.host,
            SHOP_MYSQL_PORT=str(server.port),
            SHOP_MYSQL_USER=server.cdc_user,
            SHOP_MYSQL_PASSWORD=server.cdc_password,
            PYSPARK_PYTHON=os.environ.get("PYSPARK_PYTHON", sys.executable),
        )
        cdc("validate", JOB)

        step("initial snapshot into ./lake")
        cdc("run", JOB, "--until-caught-up")

        step("load generator: inserts, updates, deletes, primary-key changes, ALTER TABLE")
        rc = loadgen.main(
            ["--host", server.host, "--port", str(server.port), "--user", server.user, "--password", server.password]
        )
        if rc:
            die("the load generator failed; see above")

        step("streaming the binlog changes into ./lake")
        cdc("run", JOB, "--until-caught-up")

        step("verifying: source tables against the lake, by key and row checksum")
        verified = cdc("verify", JOB, check=False)

        step("status: counts, positions and lag")
        cdc("status", JOB, check=False)

        step("a sample of the lake")
        show_sample("shop_shop_customers")
    if verified != 0:
        die("cdc verify found differences between MariaDB and the lake (listed above)")
    print(f"\ndemo: done in {time.monotonic() - started:.0f}s; the Delta tables are in ./lake, zero differences.")


if __name__ == "__main__":
    main()
