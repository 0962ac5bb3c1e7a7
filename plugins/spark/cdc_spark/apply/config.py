"""The sink's settings (`SinkConfig.parse` takes the same dotted keys a job file uses)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cdc_spark.apply.errors import SinkConfigError

TARGETS = ("delta", "postgres", "iceberg", "parquet")
DAY_MS = 86_400_000


@dataclass(frozen=True)
class SinkConfig:
    target: str
    path: str | None = None  # delta/parquet: the root directory; one sub-directory per table
    dsn: str | None = None  # postgres: a libpq connection string
    schema: str = "public"  # postgres schema / iceberg namespace
    catalog: Mapping[str, str] = field(default_factory=dict)  # iceberg: SqlCatalog properties
    table_name_format: str = "${topic}"
    delete_mode: str = "hard"  # hard: rows go, tombstones kept for the retention; soft: __deleted=true rows
    delete_retention_ms: int = 7 * DAY_MS
    truncate_enabled: bool = True
    errors_tolerance: str = "none"
    deadletter_path: str | None = None  # a Parquet dead-letter table
    deadletter_topic: str | None = None  # Kafka Connect's DLQ: a topic in the stream's own topic log
    deadletter_context_headers: bool = False  # __connect.errors.* headers on DLQ records
    deadletter_replication_factor: int = -1  # -1: the broker's default
    app_id: str = "cdc-spark-sink"
    schemas_enable: bool | None = None  # None: detect the JSON envelope per record
    maintenance_interval_batches: int = 50
    mode: str = "scd1"  # scd2 (delta only): history rows with __valid_from/__valid_to
    table_names: Mapping[str, str] = field(default_factory=dict)  # topic -> table, over table.name.format
    partition_by: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # table -> Delta partition columns

    @classmethod
    def parse(cls, conf: Mapping[str, Any]) -> SinkConfig:
        c = {str(k): v for k, v in conf.items()}
        target = str(c.get("target", "")).lower()
        if target not in TARGETS:
            raise SinkConfigError(f"target={target!r}: choose one of {', '.join(TARGETS)}")
        if target in ("delta", "parquet") and not c.get("path"):
            raise SinkConfigError(f"target={target} needs path (the directory that holds one table per topic)")
        if target == "postgres" and not c.get("dsn"):
            raise SinkConfigError("target=postgres needs dsn, e.g. postgresql://user:pass@host:5432/db")
        if target == "iceberg" and not c.get("catalog"):
            raise SinkConfigError("target=iceberg needs catalog (SqlCatalog properties: uri, warehouse)")
        delete_mode = str(c.get("delete.mode", "hard")).lower()
        if delete_mode not in ("hard", "soft"):
            raise SinkConfigError(f"delete.mode={delete_mode!r}: use hard or soft")
        tolerance = str(c.get("errors.tolerance", "none")).lower()
        if tolerance not in ("none", "all"):
            raise SinkConfigError(f"errors.tolerance={tolerance!r}: use none (stop) or all (dead-letter and go on)")
        dlq_topic = str(c.get("errors.deadletterqueue.topic.name") or "").strip() or None
        if tolerance == "all" and not c.get("errors.deadletterqueue.path") and not dlq_topic:
            raise SinkConfigError(
                "errors.tolerance=all needs errors.deadletterqueue.path (a Parquet dead-letter table) or "
                "errors.deadletterqueue.topic.name (a topic), or poison events would vanish"
            )
        mode = str(c.get("mode", "scd1")).lower()
        if mode not in ("scd1", "scd2") or (mode == "scd2" and target != "delta"):
            raise SinkConfigError(f"mode={mode!r}: scd1 (upsert in place) for every target; scd2 (history) with delta")
        schemas = c.get("schemas.enable")
        table_names = {str(k): str(v) for k, v in dict(c.get("table.names") or {}).items()}
        # partition.by is keyed by topic, like table.names; stored by table name, where it is used.
        partition_by = {
            _table_name(str(k), table_names, str(c.get("table.name.format", "${topic}"))): tuple(map(str, v))
            for k, v in dict(c.get("partition.by") or {}).items()
            if v
        }
        if partition_by and target != "delta":
            raise SinkConfigError(
                f"partition.by ({', '.join(sorted(partition_by))}): partitioned tables are created for target=delta; "
                f"for {target}, partition the table yourself before the first run, or drop partition.by"
            )
        return cls(
            target=target,
            path=c.get("path"),
            dsn=c.get("dsn"),
            schema=str(c.get("schema", c.get("namespace", "public"))),
            catalog=dict(c.get("catalog") or {}),
            table_name_format=str(c.get("table.name.format", "${topic}")),
            delete_mode=delete_mode,
            delete_retention_ms=int(c.get("delete.retention.ms", 7 * DAY_MS)),
            truncate_enabled=str(c.get("truncate.enabled", "true")).lower() == "true",
            errors_tolerance=tolerance,
            deadletter_path=c.get("errors.deadletterqueue.path"),
            deadletter_topic=dlq_topic,
            deadletter_context_headers=str(c.get("errors.deadletterqueue.context.headers.enable", "false")).lower()
            == "true",
            deadletter_replication_factor=int(c.get("errors.deadletterqueue.topic.replication.factor", -1)),
            app_id=str(c.get("app.id", "cdc-spark-sink")),
            schemas_enable=None if schemas is None else str(schemas).lower() == "true",
            maintenance_interval_batches=int(c.get("maintenance.interval.batches", 50)),
            mode=mode,
            table_names=table_names,
            partition_by=partition_by,
        )

    @property
    def keeps_only_latest(self) -> bool:
        """Whether only each key's latest event matters (not for the changelog or history)."""
        return self.target != "parquet" and self.mode != "scd2"

    def table_for(self, topic: str) -> str:
        """The table named for the topic in `table.names`, else `${topic}` (dots → underscores) or
        `${table}` (the topic's last segment)."""
        return _table_name(topic, self.table_names, self.table_name_format)


def _table_name(topic: str, names: Mapping[str, str], name_format: str) -> str:
    name = names.get(topic) or name_format.replace("${topic}", topic).replace("${table}", topic.rsplit(".", 1)[-1])
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def partition_columns(table: str, partition_by: Mapping[str, tuple[str, ...]], columns: list[str]) -> list[str] | None:
    """The Delta partition columns configured for a new table (None: unpartitioned)."""
    wanted = partition_by.get(table)
    if not wanted:
        return None
    missing = [c for c in wanted if c not in columns]
    if missing:
        have = ", ".join(c for c in columns if not c.startswith("__"))
        raise SinkConfigError(
            f"partition.by for table {table}: no column {', '.join(missing)} (it has {have}); fix the column names"
        )
    return list(wanted)
