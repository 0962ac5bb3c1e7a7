"""One call from topics to tables: the `cdc` source + `ChangeApplier` in foreachBatch."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from cdc_spark.apply import ChangeApplier, SinkConfig, SinkConfigError
from cdc_spark.checkpoint import clear_unplanned_leftovers
from cdc_spark.source import SourceOptions, register


def start_query(
    spark: SparkSession,
    source: Mapping[str, str],
    sink: SinkConfig | Mapping[str, Any],
    checkpoint: str,
    *,
    available_now: bool = False,
    processing_time: str | None = None,
    name: str | None = None,
) -> StreamingQuery:
    """Start the stream; `available_now=True` catches up to the current end and stops.

    The source decodes in its own tasks and, except for the Parquet changelog (which keeps
    every event), while any table keeps history (mode scd2, the job's or a table's own) and
    while any table ignores null updates (SinkConfig.keeps_only_latest), forwards only each
    key's latest event per partition; the scd1 tables then keep each key's latest (and the
    earlier events its NULLs or placeholders need) when the batch is applied. A dead-letter topic
    (errors.deadletterqueue.topic.name) is created in the topic log the stream reads.
    """
    register(spark)
    options = {k: str(v) for k, v in source.items()}
    applier = ChangeApplier(sink, log_options=options)
    _check_source(applier)
    lowered = {k.lower() for k in options}
    if applier.config.deadletter_topic and "includeheaders" not in lowered:
        options["includeHeaders"] = "true"  # dead-lettered records keep their original headers
    decoding = next((v for k, v in options.items() if k.lower() == "decode"), None)
    if decoding is None or decoding.strip().lower() == "debezium-avro":  # the sink's own decoding: its defaults
        options.setdefault("decode", "debezium-json")
        if "latestperkey" not in lowered:
            options["latestPerKey"] = str(applier.config.keeps_only_latest).lower()
        if "unavailable.value.placeholder" not in lowered:
            options["unavailable.value.placeholder"] = applier.config.unavailable_value_placeholder
        if applier.config.schemas_enable is not None and "schemas.enable" not in lowered:
            options["schemas.enable"] = str(applier.config.schemas_enable).lower()
    clear_unplanned_leftovers(checkpoint)  # a run killed before its first batch must not wedge this one
    raw = spark.readStream.format("cdc").options(**options).load()
    writer = raw.writeStream.foreachBatch(applier).option("checkpointLocation", checkpoint)
    if name:
        writer = writer.queryName(name)
    if available_now:
        writer = writer.trigger(availableNow=True)
    elif processing_time:
        writer = writer.trigger(processingTime=processing_time)
    return writer.start()


def _check_source(applier: ChangeApplier) -> None:
    """Before Spark starts: open the topic log once (a missing state.dir or a kafka.* setting the
    client refuses fails here as a plain Python error, not inside Spark's traceback), and, as Kafka
    Connect, refuse a dead-letter topic the stream itself reads: its records would come back as
    input and be dead-lettered again, batch after batch."""
    source = applier.log_options
    if not isinstance(source, SourceOptions):
        return
    source.open_log().close()
    topic = applier.config.deadletter_topic
    if topic and source.matches(topic):
        which = f"topic.pattern {source.pattern!r}" if source.pattern else "topics"
        raise SinkConfigError(
            f"errors.deadletterqueue.topic.name={topic!r} is read by this stream (it matches the source's {which}): "
            "choose a dead-letter topic outside the topics the query reads"
        )
