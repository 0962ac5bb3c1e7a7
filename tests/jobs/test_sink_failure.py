"""`cdc run` reports a failed sink query by its root cause, not by Spark's and Python's traces.

The real StreamingQueryException text is covered in tests/spark/test_large_batch.py; these
are the shapes of the other two kinds, copied from PySpark 4 output and shortened.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from cdc.api.errors import ConnectException
from cdc.jobs.run import JobRunner, sink_failure
from cdc.jobs.spec import JobSpec
from cdc.storage.status import State, TaskStatus

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
