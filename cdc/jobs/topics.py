"""The topics a job's source writes and its sink reads, as Debezium names them.

Debezium's `TopicNamingStrategy` names a table's data topic `<topic.prefix>.<db>.<table>`;
the job's RegexRouter SMTs (Kafka Connect's `RegexRouter`) may rename it before the sink
sees it. `cdc run`, `cdc status`, `cdc validate` and `cdc verify` all need these names, so
they live here, below each of them.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from cdc.jobs.spec import JobSpec, source_family


def topic_prefix(job: JobSpec) -> str:
    """Debezium's `topic.prefix` (formerly `database.server.name`), the job's name by default."""
    return str(job.source.get("topic.prefix") or job.source.get("database.server.name") or job.name)


def data_topic_pattern(prefix: str) -> str:
    """`<prefix>.<db>.<table>` only: not the schema-change, transaction or message topics."""
    return re.escape(prefix) + r"\.[^.]+\.[^.]+"


def topic_router(config: dict[str, str]) -> Callable[[str], str]:
    """Where the job's RegexRouter SMTs send a table's topic (the sink names its table after it).

    Only topic renames matter here; the stages run on a stand-in record, so a predicate on
    the topic (TopicNameMatches) decides as it would at run time.
    """
    if not config.get("transforms"):
        return lambda topic: topic
    from cdc.api.records import SourceRecord
    from cdc.runtime.plugins import PluginRegistry
    from cdc.runtime.validation import ConnectorValidator
    from cdc.transforms.chain import build_transformation_chain
    from cdc.transforms.regex_router import RegexRouter

    chain = build_transformation_chain(config, ConnectorValidator(PluginRegistry.discover()).resolve_for_chain)
    routers = [s for s in chain.stages if isinstance(s.transformation, RegexRouter)]

    def route(topic: str) -> str:
        record: SourceRecord | None = SourceRecord(None, None, topic, value={})
        for stage in routers:
            record = stage.apply(record) if record is not None else None
        return record.topic if record is not None else topic

    return route


def job_topic_router(job: JobSpec) -> Callable[[str], str]:
    """Where the job's RegexRouter SMTs send a topic (identity without transforms, or when they
    do not build: `cdc validate` and the source report that)."""
    cls = str(job.source.get("connector.class", ""))
    debezium = source_family(cls) is not None  # <prefix>.<db>.<table> topics: Debezium's naming
    if not debezium or not any(str(t.get("type", "")).endswith("RegexRouter") for t in job.transforms):
        return lambda topic: topic
    try:
        return topic_router(job.connector_config())
    except Exception:
        return lambda topic: topic


def heartbeat_topic(job: JobSpec, connector_config: dict[str, str] | None = None) -> str | None:
    """Where a Debezium source's heartbeats go (`__debezium-heartbeat.<topic.prefix>`, after the job's
    RegexRouter SMTs), or None when it sends none (`heartbeat.interval.ms` 0, the default). The
    Spark sink plans this topic as its watermark (`watermark.topic`), and `cdc status` reads it back.
    `connector_config`: the config the source runs with, when it is not the job's own."""
    config = connector_config if connector_config is not None else job.connector_config()
    try:
        interval = int(str(config.get("heartbeat.interval.ms") or 0))
    except ValueError:
        return None  # cdc validate reports it
    if interval <= 0 or source_family(str(config.get("connector.class", ""))) is None:
        return None
    return heartbeat_topic_name(job)


def heartbeat_topic_name(job: JobSpec) -> str:
    """The name of the job's heartbeat topic, whether it sends heartbeats or not: Debezium's
    `<topic.heartbeat.prefix>.<topic.prefix>` (the prefix `__debezium-heartbeat` unless set; MySQL
    refuses another), after the job's RegexRouter SMTs."""
    from cdc_debezium.naming import HEARTBEAT_TOPIC_PREFIX

    given = job.source.get("topic.heartbeat.prefix") or job.source.get("heartbeat.topics.prefix")
    return job_topic_router(job)(f"{given or HEARTBEAT_TOPIC_PREFIX}.{topic_prefix(job)}")
