"""`cdc run` reports a failed sink query by its root cause, not by Spark's and Python's traces.

The unit tests take the shapes of StreamingQueryException text copied from PySpark 4 output
and shortened (tests/spark/test_large_batch.py has a real one). The `cdc run` tests at the end
make real sinks fail, once inside a Spark task (a PostgreSQL warehouse refusing a value, raised
in a Python worker) and once on the driver (a Delta table refusing a type change, raised by the
foreachBatch function of a continuous run), and read what the user sees on stderr.
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from deltalake import DeltaTable

from cdc.api.errors import ConnectException
from cdc.jobs.run import JobRunner, sink_failure, sink_failure_message
from cdc.jobs.spec import JobSpec
from cdc.storage.status import State, TaskStatus
from tests.mysql.harness import connector_props
from tests.support.proc import CdcProcess, run_cdc, wait_for

_PY_TRACE = """An exception was raised by the Python Proxy. Return Message: Traceback (most recent call last):
  File "/x/pyspark/sql/utils.py", line 163, in call
    self.func(DataFrame(jdf, wrapped_session_jdf), batch_id)
  File "/x/cdc_spark/apply/delta.py", line 70, in apply
    source, added = conform(table, _schema(dt), source)
ValueError: inner detail
During handling of the above exception, another exception occurred:
cdc_spark.apply.errors.SchemaEvolutionError: table shop_items: column 'qty' changed type from int64 to string. Fix: x

=== Streaming Query ===
Identifier: shop [id = 1, runId = 2]
"""

_JAVA = """An exception was raised by the Python Proxy. Return Message: Traceback (most recent call last):
  File "/x/py4j/protocol.py", line 327, in get_return_value
    raise Py4JJavaError(
py4j.protocol.Py4JJavaError: An error occurred while calling o64.getResult.
: org.apache.spark.SparkException: Exception thrown in awaitResult:
\tat org.apache.spark.util.SparkThreadUtils$.awaitResult(SparkThreadUtils.scala:70)
Caused by: java.io.IOException: No space left on device
\tat java.base/java.io.FileOutputStream.writeBytes(Native Method)
"""


def test_our_errors_are_reported_by_their_advice_alone() -> None:
    assert sink_failure(_PY_TRACE) == "table shop_items: column 'qty' changed type from int64 to string. Fix: x"


def test_jvm_failures_are_reported_by_their_innermost_cause() -> None:
    assert sink_failure(_JAVA) == "java.io.IOException: No space left on device"


def test_other_python_errors_keep_their_type() -> None:
    assert sink_failure("Traceback (most recent call last):\n  File x\nKeyError: 'id'\n") == "KeyError: 'id'"
    assert sink_failure("plain words\nmore") == "plain words"


def test_offset_sums_for_catch_up_progress() -> None:
    from cdc.jobs.run import _offset_sum

    assert _offset_sum(None) == 0 and _offset_sum("null") == 0
    assert _offset_sum('{"a.b": {"0": 5, "1": 7}, "a.c": {"0": 3}}') == 15


def test_a_failed_source_task_is_reported_by_its_advice_alone() -> None:
    trace = (
        "Traceback (most recent call last):\n  File x\n    raise ConnectException(\n"
        "cdc.api.errors.ConnectException: Cannot connect to h:1 as 'u'. Check database.hostname\n"
    )
    status = TaskStatus("shop", 0, State.FAILED, "w", trace)
    worker = SimpleNamespace(status_store=SimpleNamespace(get_task=lambda name, task: status))
    runner = JobRunner(JobSpec("shop", {"connector.class": "mysql"}))
    with pytest.raises(ConnectException) as e:
        runner._check_source(worker, "shop")  # type: ignore[arg-type]
    assert str(e.value) == "the source task failed: Cannot connect to h:1 as 'u'. Check database.hostname"


def test_the_line_says_where_the_trace_is_unless_the_error_is_our_own() -> None:
    assert sink_failure_message(_PY_TRACE) == (
        "the sink failed: table shop_items: column 'qty' changed type from int64 to string. Fix: x"
    )
    assert sink_failure_message(_JAVA) == (
        "the sink failed: java.io.IOException: No space left on device (run `cdc run --verbose` to see the full trace)"
    )
    assert sink_failure_message(_JAVA, verbose=True) == "the sink failed: java.io.IOException: No space left on device"


class _Captured(Exception):
    """PySpark's CapturedException shape: Spark's message in `_desc`, the converted cause in `_cause`."""

    def __init__(self, desc: str, cause: BaseException | None = None) -> None:
        super().__init__("str() of a captured exception adds the JVM stack: JVM stacktrace: ...")
        self._desc, self._cause = desc, cause


def test_the_cause_is_found_in_the_captured_exceptions_chain() -> None:
    inner = _Captured(_PY_TRACE)
    outer = _Captured("[FOREACH_BATCH_USER_FUNCTION_ERROR] An error occurred in the user provided function", inner)
    assert sink_failure(outer) == "table shop_items: column 'qty' changed type from int64 to string. Fix: x"


# -- real failing sinks in `cdc run` ------------------------------------------------------------
SEED = random.randrange(2**32)
_TRACE_MARKERS = ("Traceback", "\tat ", "=== Streaming Query ===", "Logical Plan", "Caused by", "py4j", "Exception:")


def _job(tmp_path: Path, mariadb_db, sink: str, trigger: str = "") -> Path:
    props = connector_props(mariadb_db)
    source = "\n".join(f"  {k}: '{v}'" for k, v in props.items())
    job = tmp_path / "job.yaml"
    job.write_text(
        f"""name: shop
source:
{source}
transport:
  state.dir: {tmp_path / "state"}
sink:
{sink}
  tables:
    {mariadb_db.database}.items: {{keys: [id], target: items}}
spark:
  master: local[2]
{trigger}"""
    )
    return job


def _assert_one_line(stderr: str, starts: str, where: str) -> str:
    """stderr ends with the one-line error and holds no trace: returns that line."""
    lines = stderr.rstrip("\n").splitlines()
    last = lines[-1]
    assert last.startswith(starts), f"{where}: the last line is {last!r}\n{stderr[-3000:]}"
    noise = [line for line in lines[:-1] if any(marker in line for marker in _TRACE_MARKERS)]
    assert not noise, f"{where}: trace lines on stderr: {noise[:5]}\n{stderr[-3000:]}"
    assert len(lines) < 60, f"{where}: {len(lines)} lines on stderr\n{stderr[-3000:]}"
    return last


@pytest.mark.slow
def test_a_warehouse_that_refuses_a_value_ends_the_run_in_one_line(tmp_path: Path, mariadb_db, postgres_db) -> None:
    """A NUL character, which PostgreSQL text cannot hold: refused inside a Spark task's Python worker."""
    rng = random.Random(SEED)
    rows = rng.randint(3, 40)
    bad = rng.randint(1, rows)
    with mariadb_db.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(40))")
        cur.executemany(
            "INSERT INTO items VALUES (%s, %s)",
            [(i, f"item\x00{i}" if i == bad else f"item{i}") for i in range(1, rows + 1)],
        )
    job = _job(tmp_path, mariadb_db, f"  type: postgres\n  dsn: {postgres_db.dsn}\n  schema: lake")
    where = f"seed {SEED}"
    res = run_cdc("run", str(job), "--until-caught-up", timeout=600)
    assert res.returncode == 1, f"{where}: exit {res.returncode}\n{res.stderr[-3000:]}"
    line = _assert_one_line(res.stderr, "error: the sink failed: table lake.items: column 'name' holds a NUL", where)
    assert "Fix: " in line and "--verbose" not in line, line  # our own error: its advice, no pointer to traces

    # The failed batch is replayed on the next run and fails the same way; --verbose shows the traces.
    res = run_cdc("run", str(job), "--until-caught-up", "--verbose", timeout=600)
    assert res.returncode == 1, f"{where}: exit {res.returncode}\n{res.stderr[-3000:]}"
    assert res.stderr.rstrip("\n").splitlines()[-1] == line, f"{where}\n{res.stderr[-3000:]}"
    before = res.stderr[: res.stderr.rstrip("\n").rfind("\n")]
    assert "Traceback (most recent call last)" in before and "cdc_spark.apply.postgres.WarehouseValueError" in before
    assert re.search(r"^\tat org\.apache\.spark\.", before, re.M), f"{where}: no Java trace\n{before[-3000:]}"


@pytest.mark.slow
def test_a_lake_that_refuses_a_type_change_ends_a_continuous_run_in_one_line(tmp_path: Path, mariadb_db) -> None:
    """A column that turns from INT to VARCHAR: Delta cannot follow, refused on the driver in foreachBatch."""
    rng = random.Random(SEED)
    rows = rng.randint(3, 40)
    changed = rng.randint(1, rows)
    with mariadb_db.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE items (id INT PRIMARY KEY, qty INT)")
        cur.executemany("INSERT INTO items VALUES (%s, %s)", [(i, i * 10) for i in range(1, rows + 1)])
    lake = tmp_path / "lake"
    job = _job(tmp_path, mariadb_db, f"  type: delta\n  path: {lake}", "  trigger: {processingTime: 1 second}\n")
    where = f"seed {SEED}"
    proc = CdcProcess("run", str(job), log_path=tmp_path / "run.log")
    try:
        wait_for(lambda: _lake_rows(lake / "items") == rows, 600, "the snapshot in the lake", proc)
        with mariadb_db.connect() as conn, conn.cursor() as cur:
            cur.execute("ALTER TABLE items MODIFY qty VARCHAR(20)")
            cur.execute("UPDATE items SET qty = 'many' WHERE id = %s", (changed,))
        code = proc.proc.wait(600)  # the run stops by itself
    finally:
        if proc.alive():
            proc.kill9()
    output = proc.output()
    assert code == 1, f"{where}: exit {code}\n{output[-3000:]}"
    line = _assert_one_line(output, "error: the sink failed: table items: column 'qty' changed type from int32", where)
    assert "Fix: " in line, line


def _lake_rows(path: Path) -> int:
    try:
        return DeltaTable(str(path)).to_pyarrow_table().num_rows
    except Exception:  # not created yet
        return -1
