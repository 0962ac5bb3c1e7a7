"""Connector configuration common to every connector (Kafka Connect's ConnectorConfig)."""

from __future__ import annotations

from cdc.api.config import ConfigDef, ConfigType, Importance, NonEmptyString, Range, ValidRegex, ValidString

CONNECTOR_CONFIG_DEF = (
    ConfigDef()
    .define("name", ConfigType.STRING, validator=NonEmptyString(), importance=Importance.HIGH, documentation="Name.")
    .define(
        "connector.class",
        ConfigType.STRING,
        validator=NonEmptyString(),
        importance=Importance.HIGH,
        documentation="Class name or alias of the connector.",
    )
    .define("tasks.max", ConfigType.INT, 1, Range.at_least(1), Importance.HIGH, "Maximum number of tasks.")
    .define("tasks.max.enforce", ConfigType.BOOLEAN, True, None, Importance.LOW, "Fail if a connector asks for more.")
    .define("key.converter", ConfigType.CLASS, None, None, Importance.LOW, "Overrides the worker's key.converter.")
    .define("value.converter", ConfigType.CLASS, None, None, Importance.LOW, "Overrides the worker's value.converter.")
    .define(
        "header.converter", ConfigType.CLASS, None, None, Importance.LOW, "Overrides the worker's header.converter."
    )
    .define("transforms", ConfigType.LIST, "", None, Importance.LOW, "Aliases of the SMTs to apply, in order.")
    .define("predicates", ConfigType.LIST, "", None, Importance.LOW, "Aliases of the predicates SMTs refer to.")
    .define(
        "errors.tolerance",
        ConfigType.STRING,
        "none",
        ValidString.in_("none", "all"),
        Importance.MEDIUM,
        "'none' fails the task on a converter or SMT error; 'all' skips the record.",
    )
    .define("errors.log.enable", ConfigType.BOOLEAN, False, None, Importance.MEDIUM, "Log each tolerated error.")
    .define(
        "errors.log.include.messages",
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.MEDIUM,
        "Include the record (topic, partition, offset, key/value) in the error log.",
    )
    .define("errors.retry.timeout", ConfigType.LONG, 0, Range.at_least(-1), Importance.MEDIUM, "Retry budget (ms).")
    .define("errors.retry.delay.max.ms", ConfigType.LONG, 60000, Range.at_least(1), Importance.MEDIUM, "")
)

SOURCE_CONFIG_DEF = (
    ConfigDef(CONNECTOR_CONFIG_DEF)
    .define(
        "topic.creation.default.partitions",
        ConfigType.INT,
        None,
        Range.at_least(-1),
        Importance.LOW,
        "Partitions of topics this connector creates (-1: broker default). Enables topic creation.",
    )
    .define(
        "topic.creation.default.replication.factor",
        ConfigType.SHORT,
        -1,
        Range.at_least(-1),
        Importance.LOW,
        "Replication factor of created topics (-1: broker default).",
    )
    .define(
        "offset.flush.interval.ms",
        ConfigType.LONG,
        None,
        Range.at_least(0),
        Importance.LOW,
        "Overrides the worker's offset.flush.interval.ms for this connector.",
    )
)

SINK_CONFIG_DEF = (
    ConfigDef(CONNECTOR_CONFIG_DEF)
    .define("topics", ConfigType.LIST, "", None, Importance.HIGH, "Topics to consume.")
    .define("topics.regex", ConfigType.STRING, "", ValidRegex(), Importance.HIGH, "Regex of topics to consume.")
    .define(
        "errors.deadletterqueue.topic.name",
        ConfigType.STRING,
        "",
        None,
        Importance.MEDIUM,
        "Sink only: records that fail conversion or SMTs go here (with errors.tolerance=all).",
    )
    .define(
        "errors.deadletterqueue.context.headers.enable",
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.LOW,
        "Add __connect.errors.* headers to dead-letter records.",
    )
    .define("consumer.max.poll.records", ConfigType.INT, 500, Range.at_least(1), Importance.LOW, "Batch size of put().")
)
