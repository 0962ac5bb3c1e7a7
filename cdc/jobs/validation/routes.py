"""Topic renames and drops by the job's SMTs (Kafka Connect's RegexRouter and Filter) against
the topics the Spark sink reads."""

from __future__ import annotations

import re
from typing import Any

from cdc.jobs.spec import JobSpec
from cdc.jobs.topics import data_topic_pattern, topic_prefix
from cdc.jobs.validation.problems import Collector


def check_topic_delimiter(job: dict[str, Any], out: Collector) -> None:
    """A job reads its tables' topics as `<topic.prefix>.<db>.<table>` (the Spark sink's pattern, status,
    verify, plan): a source that joins the parts with another `topic.delimiter` (PostgreSQL honours
    it) would write topics none of them read, and the lake would silently get nothing."""
    given = (job.get("source") or {}).get("topic.delimiter")
    if given is None or str(given) == ".":
        return
    out.add(
        ("source", "topic.delimiter"),
        f"topic.delimiter is {str(given)!r}, but a job's sink, status and verify read <topic.prefix>.<db>.<table> "
        "topics only: its changes would never be applied. Remove the key (the default '.'); to name the "
        "target tables, use sink.tables.<db>.<table>.target or sink.table.name.format",
    )


def check_topic_routes(job: dict[str, Any], out: Collector, registry: Any) -> None:
    """Run the job's RegexRouter and Filter stages on each sink table's topic: the Spark sink reads
    only `<prefix>.<db>.<table>` topics, and keys sink.tables options by the routed topic."""
    transforms = job.get("transforms") or []
    if not any(str(t.get("type", "")).rsplit(".", 1)[-1] in ("RegexRouter", "Filter") for t in transforms):
        return
    from cdc.api.records import SourceRecord
    from cdc.runtime.validation import ConnectorValidator
    from cdc.transforms.chain import build_transformation_chain
    from cdc.transforms.filter import Filter
    from cdc.transforms.regex_router import RegexRouter

    spec = JobSpec(job["name"], job["source"], transforms, job.get("transport") or {}, job.get("sink") or {})
    try:
        chain = build_transformation_chain(spec.connector_config(), ConnectorValidator(registry).resolve_for_chain)
    except Exception:  # an unknown class or bad setting: source.check_source reports it
        return
    index = {str(t["name"]): i for i, t in enumerate(transforms)}
    prefix = topic_prefix(spec)
    pattern = re.compile(data_topic_pattern(prefix))
    tables = [t.source for t in spec.tables]
    samples = [(t, ("sink", "tables", t)) for t in tables] or [("db.table", ("transforms",))]
    routed: dict[str, str] = {}
    unread: set[int | None] = set()
    try:
        for table, _ in samples:
            topic = f"{prefix}.{table}"
            record: Any = SourceRecord(None, None, topic, value={})
            renamed_by = None
            for stage in chain.stages:
                if not isinstance(stage.transformation, (RegexRouter, Filter)):
                    continue
                before = record.topic
                record = stage.apply(record)
                i = index.get(stage.alias, 0)
                if record is None:
                    if tables:
                        out.add(
                            ("transforms", i),
                            f"transform {stage.alias!r} (Filter) drops every event of topic {before!r}, but "
                            f"sink.tables configures {table!r}: the table would get no changes (deletes and "
                            "truncates included); leave the table out with the source's table.exclude.list, "
                            "or remove it from sink.tables",
                        )
                    break
                if record.topic != before:
                    renamed_by = i
            else:
                if not pattern.fullmatch(record.topic):
                    if renamed_by in unread:
                        continue  # one problem per transform: the first table shows what it does
                    unread.add(renamed_by)
                    out.add(
                        ("transforms", renamed_by if renamed_by is not None else 0),
                        f"transform {transforms[renamed_by or 0]['name']!r} (RegexRouter) renames topic {topic!r} "
                        f"to {record.topic!r}, which the Spark sink never reads (it reads {prefix}.<db>.<table> "
                        "topics only): its changes would never be applied. Keep renamed topics in that shape, or "
                        f"remove the transform and name the target with sink.tables.{table}.target",
                    )
                elif tables and record.topic in routed.values():
                    other = next(t for t, r in routed.items() if r == record.topic)
                    out.warn(
                        ("transforms", renamed_by or 0),
                        f"RegexRouter sends {other!r} and {table!r} to one topic {record.topic!r}: the sink "
                        "applies both to one table, and rows with equal keys overwrite each other",
                    )
                routed[table] = record.topic
    finally:
        chain.close()
