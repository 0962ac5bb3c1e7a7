"""Dead letters: poison events (records the sink cannot decode) and the events of rows a target
refuses for their values (refused.py) go to a Parquet dead-letter table and/or a dead-letter
topic under errors.tolerance=all; under none, a poison event stops the query here (a refused
row stops it where the target finds it).

Each batch's dead letters are written once, after its apply and before Spark commits the batch,
as Kafka Connect writes a task's errant records before committing its offsets."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from cdc.log import TopicSpec
from cdc_spark.apply.config import SinkConfig
from cdc_spark.apply.errors import RUN_AGAIN, PoisonEventError, key_text, value_text
from cdc_spark.decode.schemas import restore
from cdc_spark.source.options import SourceOptions

logger = logging.getLogger(__name__)
DEADLETTER_COLUMNS = ("topic", "partition", "offset", "key", "value", "error", "batch_id", "failed_at")
_POSITION = ("topic", "partition", "offset")
_RECORD = (*_POSITION, "raw_key", "value", "__error")  # a dead letter before it is written


def stop_on_first(
    errors: Sequence[Row],
    table_for: Callable[[str], str] | None = None,
    failed: Callable[[], DataFrame] | None = None,
) -> None:
    """Raise for the earliest poison event of the batch (errors: the collected error rows), naming
    its table (`table_for`: topic → table) and its record key, read from `failed` (the batch's
    error rows with `raw_key`) on this error path only."""
    r = min(errors, key=lambda e: (e["topic"], e["partition"], e["offset"]))
    where = f"table {table_for(r['topic'])}, " if table_for is not None else ""
    key = "key unknown"
    if failed is not None:
        try:
            raw = _raw_key(failed, r)
            key = f"key {record_key_text(raw)}" if raw is not None else "no record key"
        except Exception:  # the event is still named by its position; this error must not hide it
            logger.debug("cannot read the record key of the poison event", exc_info=True)
    cause = " ".join(str(r["__error"]).split())
    # A cause that knows its own fix (a keyless table) says it; otherwise the producer is at fault.
    fix = (
        ""
        if "Fix:" in cause
        else (
            " Fix: fix the producer, or set errors.tolerance=all with errors.deadletterqueue.path (a table) or "
            "errors.deadletterqueue.topic.name (a topic) to route such events there and keep going"
        )
    )
    raise PoisonEventError(
        f"{where}{key}: poison event at {r['topic']}-{r['partition']}@{r['offset']}: {cause}.{fix}; {RUN_AGAIN}."
    )


def _raw_key(failed: Callable[[], DataFrame], r: Row) -> bytes | None:
    """The record key bytes of the error row `r` (None when the record had none)."""
    frame = failed()
    if "raw_key" not in frame.columns:
        return None
    at = (F.col("topic") == r["topic"]) & (F.col("partition") == r["partition"]) & (F.col("offset") == r["offset"])
    found = frame.filter(at).select("raw_key").limit(1).collect()
    return bytes(found[0]["raw_key"]) if found and found[0]["raw_key"] is not None else None


def record_key_text(raw: bytes) -> str:
    """A record key as the sink's errors name keys: `id=2` or `(a=1, b='x')` for a JSON key struct
    (with or without its schema envelope), else the key as text (or bytes), cut when long."""
    try:
        key = json.loads(raw)
    except ValueError:  # UnicodeDecodeError too: not UTF-8 text, shown as bytes
        try:
            return value_text(raw.decode("utf-8"))
        except UnicodeDecodeError:
            return value_text(raw)
    if isinstance(key, dict) and set(key) == {"schema", "payload"}:
        key = key["payload"]
    if isinstance(key, dict) and key:
        return key_text(key, list(key))
    return value_text(key)


def refused_records(events: DataFrame, parked: Sequence[Mapping[str, Any]], schemas: Mapping[int, str]) -> pa.Table:
    """The records of the refused rows' events, found in the batch's decoded `events` by their
    position (`parked`: topic, partition, offset, problem, error_class): the original record key,
    value (its schema put back where the source cut it off) and headers, with `__error` (the
    problem) and `__exception` (the error class). Every parked event must be found: a dead letter
    that went missing would be a row lost without a trace."""
    wanted = pa.Table.from_pylist(
        [{k: p[k] for k in (*_POSITION, "problem", "error_class")} for p in parked],
        schema=pa.schema(
            [
                ("topic", pa.string()),
                ("partition", pa.int32()),
                ("offset", pa.int64()),
                ("problem", pa.string()),
                ("error_class", pa.string()),
            ]
        ),
    )
    columns = [c for c in (*_POSITION, "raw_key", "value", "schema_id", "headers") if c in events.columns]
    spark = SparkSession.active()
    found = (
        events.filter(F.col("key").isNotNull())  # not the keyless marker rows sharing a position
        .select(*columns)
        .join(F.broadcast(spark.createDataFrame(wanted)), list(_POSITION))
        .orderBy(*_POSITION)
        .toArrow()
    )
    if found.num_rows != wanted.num_rows:
        raise RuntimeError(
            f"{wanted.num_rows} refused rows' events were to be dead-lettered, but {found.num_rows} were found in "
            "the batch: the batch stops here so that none is lost; please report this"
        )
    found = restore(found, schemas)
    if "raw_key" not in found.column_names:
        found = found.append_column("raw_key", pa.nulls(found.num_rows, pa.binary()))
    found = found.append_column("__error", found.column("problem"))
    return found.append_column("__exception", found.column("error_class"))


def write(errors: DataFrame | None, path: str, batch_id: int, refused: pa.Table | None = None) -> None:
    """The batch's dead letters (`errors`: its poison events; `refused`: refused_records) in one
    sub-directory per batch, overwritten on replay, so a re-run batch adds no duplicates."""
    frames = [errors.select(*_RECORD)] if errors is not None else []
    if refused is not None and refused.num_rows:
        frames.append(SparkSession.active().createDataFrame(refused.select(list(_RECORD))).select(*_RECORD))
    if not frames:
        return
    frame = frames[0] if len(frames) == 1 else frames[0].unionByName(frames[1])
    (
        frame.select(
            "topic",
            "partition",
            "offset",
            F.col("raw_key").cast("string").alias("key"),
            F.col("value").cast("string").alias("value"),
            F.col("__error").alias("error"),
            F.lit(batch_id).cast("long").alias("batch_id"),
            F.current_timestamp().alias("failed_at"),
        )
        .write.mode("overwrite")
        .parquet(f"{path.rstrip('/')}/batch_id={batch_id}")
    )


def _stage(error: str) -> tuple[str, str]:
    """Kafka Connect's stage and exception class for a decode error message."""
    head = error.split(":", 1)[0]
    if "record key of topic" in head:
        return "KEY_CONVERTER", "cdc_spark.decode.deserializer.DeserializeError"
    if "record value of topic" in head:
        return "VALUE_CONVERTER", "cdc_spark.decode.deserializer.DeserializeError"
    return "TASK_PUT", "cdc_spark.apply.errors.PoisonEventError"


def context_headers(row: Mapping[str, Any], connector: str) -> list[tuple[str, bytes]]:
    """The `__connect.errors.*` headers Kafka Connect's DeadLetterQueueReporter adds. A refused
    row (its `__exception` set) failed where Kafka Connect's sink task put() fails: TASK_PUT."""
    refused = row.get("__exception")
    stage, exc = ("TASK_PUT", refused) if refused else _stage(row["__error"])
    context = {
        "topic": row["topic"],
        "partition": str(row["partition"]),
        "offset": str(row["offset"]),
        "connector.name": connector,
        "task.id": "0",
        "stage": stage,
        "class.name": "cdc_spark.apply.engine.ChangeApplier",
        "exception.class.name": exc,
        "exception.message": row["__error"],
        "exception.stacktrace": f"{exc}: {row['__error']}",
    }
    return [(f"__connect.errors.{k}", v.encode()) for k, v in context.items()]


def send(
    errors: DataFrame | None, log_options: SourceOptions, config: SinkConfig, refused: pa.Table | None = None
) -> int:
    """The batch's dead letters (poison events, then refused rows' events), with their original key,
    value and headers, to the DLQ topic; returns how many.

    At least once, like Kafka Connect's DLQ: a replayed batch sends its records again.
    """
    rows: list[dict[str, Any]] = []
    if errors is not None:
        columns = [*_RECORD, *(["headers"] if "headers" in errors.columns else [])]
        rows = [r.asDict(recursive=True) for r in errors.select(*columns).orderBy(*_POSITION).collect()]
    if refused is not None:
        rows += refused.to_pylist()
    if not rows:
        return 0
    topic = config.deadletter_topic or ""
    log = log_options.open_log()
    try:
        log.create_topics([TopicSpec(topic, 1, replication_factor=config.deadletter_replication_factor)])
        producer = log.producer()
        try:
            for r in rows:
                headers = [(h["key"], h["value"]) for h in (r.get("headers") or [])]
                if config.deadletter_context_headers:
                    headers += context_headers(r, config.app_id)
                producer.send(topic, r["value"], key=r["raw_key"], headers=headers)
            if producer.flush(60):
                raise PoisonEventError(
                    f"dead-letter topic {topic!r} did not acknowledge {len(rows)} records within 60 s; "
                    "check the topic log (state.dir or bootstrap.servers) and retry the query"
                )
        finally:
            producer.close()
    finally:
        log.close()
    return len(rows)
