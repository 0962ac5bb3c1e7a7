"""A Debezium MySQL connector config, as a file given to `cdc standalone`, runs (issue 19).

Before, `column.propagate.source.type` was refused, and the refusal stopped the whole worker. Now
every Debezium key loads: the connector streams, and the keys not implemented are named at start
with what happens instead.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.mysql.harness import connector_props, execute
from tests.rig import MariaDbServer

ROOT = Path(__file__).resolve().parents[2]

DEBEZIUM_KEYS = {
    "column.propagate.source.type": ".*\\\\.v",
    "datatype.propagate.source.type": ".+\\\\.VARCHAR",
    "enable.time.adjuster": "true",
    "event.processing.failure.handling.mode": "warn",
    "inconsistent.schema.handling.mode": "warn",
    "topic.naming.strategy": "io.debezium.schema.DefaultTopicNamingStrategy",
    "field.name.adjustment.mode": "avro",
    "snapshot.max.threads": "4",
    "incremental.snapshot.chunk.size": "2048",
    "signal.data.collection": "inventory.debezium_signal",
    "schema.name.adjustment.mode": "avro",
    "converters": "boolean",
    "boolean.type": "io.debezium.connector.binlog.converters.TinyIntOneToBooleanConverter",
    "column.mask.hash.SHA-256.with.salt.CzQMA0cB5K": "x\\\\.y\\\\.z",
}


def test_a_debezium_config_file_runs_in_a_standalone_worker(mariadb_db: MariaDbServer, tmp_path: Path) -> None:
    execute(mariadb_db, "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))", "INSERT INTO t VALUES (1, 'a')")
    worker = tmp_path / "worker.properties"
    worker.write_text(f"state.dir={tmp_path / 'state'}\nlisteners=http://127.0.0.1:0\noffset.flush.interval.ms=100\n")
    props = {"name": "inventory", **connector_props(mariadb_db), **DEBEZIUM_KEYS}
    props["schema.history.internal.file.filename"] = str(tmp_path / "history.jsonl")
    connector = tmp_path / "inventory.properties"
    connector.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    proc = subprocess.Popen(
        [sys.executable, "-m", "cdc.cli.main", "standalone", str(worker), str(connector)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    assert proc.stderr is not None
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stderr.readline, "")), daemon=True)  # type: ignore[union-attr]
    reader.start()
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None and "Streaming binlog from" not in "".join(lines):
            time.sleep(0.2)
        time.sleep(1)
        err = "".join(lines)
        assert proc.poll() is None, err  # the worker still runs
        assert "Streaming binlog from" in err, err
        assert "FAILED" not in err and "Traceback" not in err, err
        for key in ("incremental.snapshot.chunk.size", "signal.data.collection", "snapshot.max.threads"):  # issue 22
            assert f"{key}=" not in err, err
        for key in ("column.propagate.source.type", "boolean.type", "column.mask.hash.SHA-256.with.salt.CzQMA0cB5K"):
            assert f"'{key}' was supplied but isn't a known config" not in err, err
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
