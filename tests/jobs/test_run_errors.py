"""How `cdc run` ends when its sink query fails, without Spark: a stand-in query that fails the
way PySpark's does (awaitTermination raises the StreamingQueryException, exception() returns it).

PySpark's own StreamingQueryException needs a JVM to be built; the stand-in is its base class
(which both classic PySpark's and Spark Connect's exceptions derive from) carrying Spark's
message in `_desc` as classic PySpark's does. tests/jobs/test_sink_failure.py runs real failing
sinks through `cdc run`.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from click.testing import CliRunner
from pyspark.errors import StreamingQueryException

from cdc.api.errors import ConnectException
from cdc.cli.main import cli
from cdc.jobs.run import JobRunner
from cdc.jobs.spec import JobSpec

SEED = random.randrange(2**32)

_PLAN = "\n=== Streaming Query ===\nIdentifier: shop [id = 1, runId = 2]\n\nLogical Plan:\n~WriteToMicroBatch"


def _desc(table: str, column: str) -> str:
    """A foreachBatch failure as Spark words it: the batch function's traceback, the worker's inside it."""
    return (
        "[FOREACH_BATCH_USER_FUNCTION_ERROR] An error occurred in the user provided function in foreach batch "
        "sink. Reason: An exception was raised by the Python Proxy. Return Message: Traceback (most recent call "
        'last):\n  File "/x/cdc_spark/apply/engine.py", line 233, in _apply_postgres\n'
        "    for row in applied.collect():\n"
        "pyspark.errors.exceptions.captured.PythonException: An exception was thrown from the Python worker:\n"
        'Traceback (most recent call last):\n  File "/x/cdc_spark/apply/postgres.py", line 330, in _refuse_nul\n'
        f"cdc_spark.apply.postgres.WarehouseValueError: table {table}: column {column!r} holds a NUL character. "
        "Fix: remove it at the source\n SQLSTATE: 39000" + _PLAN
    )


class _Failed(StreamingQueryException):
    def __init__(self, desc: str) -> None:
        super().__init__(message=desc + "\n\nJVM stacktrace:\n\tat org.apache.spark.sql.Foo.bar(Foo.scala:1)")
        self._desc = desc


class FailedQuery:
    """A Trigger.AvailableNow query whose first micro-batch failed after `polls` waits."""

    def __init__(self, error: _Failed, polls: int) -> None:
        self.error, self.polls = error, polls
        self.recentProgress: list[dict[str, Any]] = []
        self.lastProgress: dict[str, Any] | None = None  # StreamingQuery's: its first batch never finished
        self.status = {"message": "Processing new data", "isDataAvailable": True, "isTriggerActive": True}

    def awaitTermination(self, timeout: float | None = None) -> bool:
        if self.polls > 0:
            self.polls -= 1
            return False
        raise self.error

    def exception(self) -> _Failed | None:
        return self.error if self.polls == 0 else None


@pytest.mark.parametrize("verbose", [False, True])
def test_a_failed_catch_up_ends_with_one_line_and_the_trace_only_when_verbose(verbose: bool) -> None:
    rng = random.Random(SEED)
    table, column = f"lake.t{rng.randrange(1000)}", f"c{rng.randrange(1000)}"
    printed: list[str] = []
    runner = JobRunner(JobSpec("shop", {"connector.class": "mysql"}), True, progress=printed.append, verbose=verbose)
    query = FailedQuery(_Failed(_desc(table, column)), polls=rng.randint(0, 3))

    runner._await_catch_up(query)  # returns: awaitTermination's exception is not raised through it
    with pytest.raises(ConnectException) as e:
        runner._raise_if_failed(query)

    where = f"seed {SEED}"
    assert str(e.value) == (
        f"the sink failed: table {table}: column {column!r} holds a NUL character. Fix: remove it at the source"
    ), where
    trace = "\n".join(printed)
    if verbose:
        assert "Traceback (most recent call last)" in trace and "Logical Plan" in trace, where
    else:
        assert printed == [], where


def test_a_foreign_error_says_where_its_trace_is() -> None:
    desc = (
        "Traceback (most recent call last):\n  File x\npyarrow.lib.ArrowNotImplementedError: Function "
        "'greater_equal' has no kernel matching input types (string, string_view)" + _PLAN
    )
    runner = JobRunner(JobSpec("shop", {"connector.class": "mysql"}), True, progress=lambda m: None)
    with pytest.raises(ConnectException) as e:
        runner._raise_if_failed(FailedQuery(_Failed(desc), polls=0))
    assert str(e.value) == (
        "the sink failed: ArrowNotImplementedError: Function 'greater_equal' has no kernel matching input types "
        "(string, string_view) (run `cdc run --verbose` to see the full trace)"
    )


def test_run_documents_verbose() -> None:
    result = CliRunner().invoke(cli, ["run", "--help"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())  # click wraps the help to the terminal's width
    assert "-v, --verbose" in text and "full Python and Java" in text


def test_a_source_task_error_of_ours_is_its_message_whatever_its_class_is_called() -> None:
    """A task's trace ending in one of our exceptions whose name ends in neither Error nor
    Exception (the MySQL connector's LineageBreak after a RESET MASTER): `cdc run` printed
    "the source task failed: Traceback (most recent call last):" instead of the advice."""
    from cdc.jobs.run import root_cause

    trace = (
        "Traceback (most recent call last):\n"
        '  File "/x/cdc_mysql/lineage_watch.py", line 197, in check\n'
        "    raise LineageBreak(\n"
        "cdc_mysql.lineage_watch.LineageBreak: The binlog lineage changed while streaming: the server's binlog "
        "ends below the position read (RESET MASTER, ...); set snapshot.mode=when_needed\n"
    )
    cause = root_cause(trace)
    assert cause.startswith("The binlog lineage changed while streaming") and "snapshot.mode=when_needed" in cause
