"""The sink's settings (`SinkConfig.parse` takes the same dotted keys a job file uses).

Every setting is checked when the query starts: an unknown or misspelled key, a value of the
wrong shape or a contradiction is refused with the fix, not found out mid-stream or ignored.
"""

from __future__ import annotations

import difflib
import logging
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cdc.api import libpq_tls
from cdc.api.errors import ConfigException
from cdc_spark.apply.errors import SinkConfigError
from cdc_spark.apply.evolution import DEFAULT_BEHAVIOR
from cdc_spark.apply.iceberg_catalog import catalog_properties, parse_catalog
from cdc_spark.apply.table_options import TableOptionError, TableOptions, parse_behavior
from cdc_spark.decode import unavailable

log = logging.getLogger(__name__)
TARGETS = ("delta", "postgres", "iceberg", "parquet")
DAY_MS = 86_400_000
KEYS = (
    "target",
    "path",
    "dsn",
    "schema",
    "namespace",
    "catalog",
    "table.name.format",
    "table.names",
    "partition.by",
    "delete.mode",
    "delete.retention.ms",
    "truncate.enabled",
    "errors.tolerance",
    "errors.deadletterqueue.path",
    "errors.deadletterqueue.topic.name",
    "errors.deadletterqueue.topic.replication.factor",
    "errors.deadletterqueue.context.headers.enable",
    "app.id",
    "schemas.enable",
    "maintenance.interval.batches",
    "mode",
    "table.modes",
    "table.delete.modes",
    "table.options",
    "ignore.null.updates",
    "schema.change.behavior",
    "unavailable.value.placeholder",
    "apply.on",
    "buckets",
    # postgres: libpq's TLS parameters (also possible inside dsn; these win over the dsn's)
    *libpq_tls.PARAMS,
)
# Settings users bring from other CDC sinks, and where that choice lives here.
_ELSEWHERE = {
    "keys": "the key columns are the change event's record key (the source table's primary key, or the "
    "connector's message.key.columns); the sink has no keys setting",
    "sequence.by": "events are ordered by their source position (__seq); the sink has no sequence.by setting",
}
_PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")
_TOPIC_NAME = re.compile(r"[A-Za-z0-9._-]{1,249}")
_PG_MAX_IDENTIFIER = 63  # bytes; PostgreSQL cuts longer names, which then match nothing they were compared with
_DLQ_KEYS = ("errors.deadletterqueue.path", "errors.deadletterqueue.topic.name")
_CATALOG_EXAMPLE = (
    "{'type': 'rest', 'uri': 'https://catalog.example.com/api/catalog'} or "
    "{'uri': 'sqlite:////lake/catalog.db', 'warehouse': 'file:///lake'} (a SQL catalog)"
)


@dataclass(frozen=True)
class SinkConfig:
    target: str
    path: str | None = None  # delta/parquet: the root directory; one sub-directory per table
    dsn: str | None = field(default=None, repr=False)  # postgres: a libpq connection string (may hold a password)
    # postgres: sslmode, sslrootcert, sslcert, sslkey, sslpassword...; not in repr (sslpassword is a secret)
    tls: Mapping[str, str] = field(default_factory=dict, repr=False)
    schema: str = "public"  # postgres schema / iceberg namespace
    # iceberg: pyiceberg's catalog properties (apply/iceberg_catalog.py); not in repr, it may hold secrets
    catalog: Mapping[str, Any] = field(default_factory=dict, repr=False)
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
    maintenance_interval_batches: int = 50  # 0: never
    mode: str = "scd1"  # scd2 (delta only): history rows with __valid_from/__valid_to
    table_names: Mapping[str, str] = field(default_factory=dict)  # topic -> table, over table.name.format
    partition_by: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # table -> Delta partition columns
    # Per-table overrides of mode / delete.mode (table.modes, table.delete.modes: keyed by topic like
    # table.names, stored by table name); the job-wide mode / delete_mode apply to every other table.
    table_modes: Mapping[str, str] = field(default_factory=dict)
    table_delete_modes: Mapping[str, str] = field(default_factory=dict)
    # AUTO CDC's per-table options (table_options.py; table.options, keyed by topic, stored by table
    # name) and the job-wide default of ignore_null_updates (ignore.null.updates).
    table_options: Mapping[str, TableOptions] = field(default_factory=dict)
    ignore_null_updates: bool = False
    # schema.change.behavior: the job's default of each table's (Flink CDC's five; apply/evolution.py).
    schema_change_behavior: str = DEFAULT_BEHAVIOR
    # The source connector's unavailable.value.placeholder: where it stands, the target keeps its value.
    unavailable_value_placeholder: str = unavailable.DEFAULT
    # delta, iceberg: where a batch is applied. executors: Spark tasks apply disjoint key buckets of
    # each table (buckets.py) and the driver commits their files; driver: one delta-rs MERGE (or
    # pyiceberg delete + append) per table
    # on the driver (the earlier layout; tables in it stay on the driver whatever this says).
    apply_on: str = "executors"
    buckets: int = 16  # delta, iceberg, apply.on=executors: the key buckets of a table the sink creates

    @classmethod
    def parse(cls, conf: Mapping[str, Any]) -> SinkConfig:
        c = {str(k): v for k, v in conf.items()}
        _check_keys(c)
        target = str(c.get("target", "")).strip().lower()
        if target not in TARGETS:
            raise SinkConfigError(f"target={target!r}: choose one of {', '.join(TARGETS)}")
        if target in ("delta", "parquet") and not c.get("path"):
            raise SinkConfigError(f"target={target} needs path (the directory that holds one table per topic)")
        if target == "postgres" and not c.get("dsn"):
            raise SinkConfigError("target=postgres needs dsn, e.g. postgresql://user:pass@host:5432/db")
        if target == "iceberg" and not c.get("catalog"):
            raise SinkConfigError(
                f"target=iceberg needs catalog: pyiceberg's catalog properties, e.g. {_CATALOG_EXAMPLE}"
            )
        delete_mode = str(c.get("delete.mode", "hard")).strip().lower()
        if delete_mode not in ("hard", "soft"):
            raise SinkConfigError(f"delete.mode={delete_mode!r}: use hard or soft")
        tolerance = str(c.get("errors.tolerance", "none")).strip().lower()
        if tolerance not in ("none", "all"):
            raise SinkConfigError(f"errors.tolerance={tolerance!r}: use none (stop) or all (dead-letter and go on)")
        dlq_topic = str(c.get("errors.deadletterqueue.topic.name") or "").strip() or None
        if tolerance == "all" and not c.get("errors.deadletterqueue.path") and not dlq_topic:
            raise SinkConfigError(
                "errors.tolerance=all needs errors.deadletterqueue.path (a Parquet dead-letter table) or "
                "errors.deadletterqueue.topic.name (a topic), or poison events would vanish"
            )
        _check_dead_letter(c, tolerance, dlq_topic)
        mode = str(c.get("mode", "scd1")).strip().lower()
        if mode not in ("scd1", "scd2") or (mode == "scd2" and target != "delta"):
            raise SinkConfigError(f"mode={mode!r}: scd1 (upsert in place) for every target; scd2 (history) with delta")
        name_format = _name_format(c)
        table_names = {
            str(k): str(v)
            for k, v in _mapping(c, "table.names", "{'shop.inv.orders': 'orders'} (topic: table)").items()
        }
        # partition.by is keyed by topic, like table.names; stored by table name, where it is used.
        partition_by = {
            _table_name(str(k), table_names, name_format): cols
            for k, v in _mapping(c, "partition.by", "{'shop.inv.orders': ['day']} (topic: columns)").items()
            if (cols := _columns(v))
        }
        table_modes = _per_table(c, "table.modes", ("scd1", "scd2"), table_names, name_format)
        table_delete_modes = _per_table(c, "table.delete.modes", ("hard", "soft"), table_names, name_format)
        scd2 = sorted(t for t, m in table_modes.items() if m == "scd2")
        if scd2 and target != "delta":
            raise SinkConfigError(
                f"table.modes: scd2 (history) for table {scd2[0]} needs target=delta; use scd1 for target={target}"
            )
        ignore_nulls = _ignore_nulls(c, target)
        try:
            behavior = parse_behavior(c.get("schema.change.behavior"))
        except TableOptionError as e:
            raise SinkConfigError(str(e)) from None
        table_options = _table_options(
            c, target, lambda t: table_modes.get(t, mode), ignore_nulls, table_names, name_format, behavior
        )
        if partition_by and target != "delta":
            raise SinkConfigError(
                f"partition.by ({', '.join(sorted(partition_by))}): partitioned tables are created for target=delta; "
                f"for {target}, partition the table yourself before the first run, or drop partition.by"
            )
        schema = str(c.get("schema", c.get("namespace", "public")))
        if target == "postgres":
            _check_dsn(str(c["dsn"]))
        tls = _tls(c, target)
        if target in ("postgres", "iceberg"):
            _check_schema(target, schema)
        if not isinstance(c.get("catalog") or {}, Mapping):  # not quoted: a database URL may hold a password
            raise SinkConfigError(
                f"catalog must be a mapping of pyiceberg's catalog properties, e.g. {_CATALOG_EXAMPLE}; a SQL "
                "catalog's database URL goes in its uri"
            )
        catalog = catalog_properties(c.get("catalog") or {})
        if target == "iceberg":
            parse_catalog(catalog)  # the type, its uri and its modules, before the query starts
        app_id = str(c.get("app.id", "cdc-spark-sink")).strip()
        if not app_id:
            raise SinkConfigError(
                "app.id must not be empty: it identifies this query's commits so that a replayed batch is "
                "skipped; give each query writing to the same tables its own app.id"
            )
        return cls(
            target=target,
            path=c.get("path"),
            dsn=c.get("dsn"),
            tls=tls,
            schema=schema,
            catalog=catalog,
            table_name_format=name_format,
            delete_mode=delete_mode,
            delete_retention_ms=_int(c, "delete.retention.ms", 7 * DAY_MS, 0, "0 or more (milliseconds)"),
            truncate_enabled=bool(_flag(c, "truncate.enabled", True)),
            errors_tolerance=tolerance,
            deadletter_path=c.get("errors.deadletterqueue.path"),
            deadletter_topic=dlq_topic,
            deadletter_context_headers=bool(_flag(c, "errors.deadletterqueue.context.headers.enable", False)),
            deadletter_replication_factor=_replication_factor(c),
            app_id=app_id,
            schemas_enable=_flag(c, "schemas.enable", None),
            maintenance_interval_batches=_int(
                c, "maintenance.interval.batches", 50, 0, "0 (never) or more (every N micro-batches)"
            ),
            mode=mode,
            table_names=table_names,
            partition_by=partition_by,
            table_modes=table_modes,
            table_delete_modes=table_delete_modes,
            table_options=table_options,
            ignore_null_updates=ignore_nulls,
            schema_change_behavior=behavior,
            unavailable_value_placeholder=_placeholder(c),
            apply_on=_apply_on(c, target),
            buckets=_int(c, "buckets", 16, 1, "1 to 10000 (key buckets of a new Delta or Iceberg table)", upper=10_000),
        )

    @property
    def placeholder(self) -> unavailable.Placeholder:
        return unavailable.Placeholder.parse(self.unavailable_value_placeholder)

    @property
    def keeps_only_latest(self) -> bool:
        """Whether only each key's latest event matters (not for the changelog or history).

        False when any table keeps history: the source then forwards every event, and the
        scd1 tables still keep each key's latest one when the batch is applied. False too when any
        table ignores null updates: a key's earlier updates in the batch hold the values its latest
        one leaves NULL (table_options.py), and the source's reduction does not know which table
        a topic is."""
        history = self.mode == "scd2" or "scd2" in self.table_modes.values()
        partial = self.ignore_null_updates or any(o.ignore_null_updates for o in self.table_options.values())
        return self.target != "parquet" and not history and not partial

    def mode_for(self, table: str) -> str:
        """The table's mode: its own (table.modes), else the job's."""
        return self.table_modes.get(table, self.mode)

    def options_for(self, table: str) -> TableOptions:
        """The table's AUTO CDC options (table.options), else the job's defaults."""
        own = self.table_options.get(table)
        if own is not None:
            return own
        return TableOptions(
            ignore_null_updates=self.ignore_null_updates, schema_change_behavior=self.schema_change_behavior
        )

    def null_update_topics(self, topics: Iterable[str]) -> frozenset[str]:
        """Those of `topics` whose table keeps its values where an update carries NULL."""
        return frozenset(t for t in topics if self.options_for(self.table_for(t)).ignore_null_updates)

    def delete_mode_for(self, table: str) -> str:
        """The table's delete mode: its own (table.delete.modes), else the job's."""
        return self.table_delete_modes.get(table, self.delete_mode)

    def table_for(self, topic: str) -> str:
        """The table named for the topic in `table.names`, else `${topic}` (dots → underscores) or
        `${table}` (the topic's last segment)."""
        return _table_name(topic, self.table_names, self.table_name_format)


def _apply_on(c: Mapping[str, Any], target: str) -> str:
    value = str(c.get("apply.on", "executors")).strip().lower()
    if value not in ("executors", "driver"):
        raise SinkConfigError(
            f"apply.on={value!r}: use executors (Spark tasks apply each table's key buckets in parallel) or "
            "driver (one MERGE per table on the Spark driver)"
        )
    if "apply.on" in c and target not in ("delta", "iceberg"):
        raise SinkConfigError(f"apply.on is a setting of target=delta and target=iceberg; drop it for target={target}")
    return value


def _table_name(topic: str, names: Mapping[str, str], name_format: str) -> str:
    name = names.get(topic) or name_format.replace("${topic}", topic).replace("${table}", topic.rsplit(".", 1)[-1])
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def _per_table(
    c: Mapping[str, Any], key: str, allowed: tuple[str, ...], names: Mapping[str, str], name_format: str
) -> dict[str, str]:
    """A {topic: value} override map, checked and stored by table name."""
    out: dict[str, str] = {}
    example = f"{{'shop.inv.orders': '{allowed[-1]}'}} (topic: {' or '.join(allowed)})"
    for topic, raw in _mapping(c, key, example).items():
        value = str(raw).strip().lower()
        if value not in allowed:
            raise SinkConfigError(f"{key}: {raw!r} for topic {topic}: use {' or '.join(allowed)}")
        out[_table_name(str(topic), names, name_format)] = value
    return out


def _ignore_nulls(c: Mapping[str, Any], target: str) -> bool:
    """ignore.null.updates: the job's default of each table's ignore_null_updates."""
    value = bool(_flag(c, "ignore.null.updates", False))
    if value and target == "parquet":
        raise SinkConfigError(
            "ignore.null.updates: the parquet changelog appends every event as it came, it keeps no row whose "
            "values an update could keep; drop it for target=parquet"
        )
    return value


def _table_options(
    c: Mapping[str, Any],
    target: str,
    mode_for: Callable[[str], str],
    ignore_nulls: bool,
    names: Mapping[str, str],
    name_format: str,
    behavior: str,
) -> dict[str, TableOptions]:
    """table.options ({topic: {option: value}}), each parsed for its table's mode, by table name."""
    example = "{'shop.inv.orders': {'except_column_list': ['note'], 'ignore_null_updates': true}} (topic: options)"
    out: dict[str, TableOptions] = {}
    for topic, raw in _mapping(c, "table.options", example).items():
        if not isinstance(raw, Mapping):
            raise SinkConfigError(f"table.options for topic {topic} must be a mapping, e.g. {example}; got {raw!r}")
        table = _table_name(str(topic), names, name_format)
        try:
            out[table] = TableOptions.parse(raw, mode_for(table), target, ignore_nulls, behavior)
        except TableOptionError as e:
            raise SinkConfigError(f"table.options for topic {topic}: {e}") from None
    return out


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


def _check_keys(c: Mapping[str, Any]) -> None:
    """Unknown keys are refused: a misspelled one would silently leave its default in force."""
    for key in c:
        if key in KEYS:
            continue
        if key in _ELSEWHERE:
            raise SinkConfigError(f"{key}: {_ELSEWHERE[key]}")
        close = difflib.get_close_matches(key.lower(), KEYS, n=1, cutoff=0.75)
        hint = f"did you mean {close[0]}? " if close else ""
        raise SinkConfigError(f"unknown setting {key} of the sink: {hint}The settings are {', '.join(KEYS)}")


def _check_dead_letter(c: Mapping[str, Any], tolerance: str, dlq_topic: str | None) -> None:
    given = [k for k in _DLQ_KEYS if c.get(k)]
    if given and tolerance != "all":
        # Kafka Connect accepts this too (switching tolerance to none while debugging keeps the DLQ
        # settings), but it should not pass unnoticed.
        log.warning(
            "%s is used only with errors.tolerance=all; with errors.tolerance=%s a poison event stops the query",
            given[0],
            tolerance,
        )
    if dlq_topic is not None and (not _TOPIC_NAME.fullmatch(dlq_topic) or dlq_topic in (".", "..")):
        raise SinkConfigError(
            f"errors.deadletterqueue.topic.name={dlq_topic!r} is not a legal topic name: use letters, digits, "
            "'.', '_' and '-' (at most 249)"
        )


def _name_format(c: Mapping[str, Any]) -> str:
    fmt = str(c.get("table.name.format", "${topic}"))
    unknown = [p for p in _PLACEHOLDER.findall(fmt) if p not in ("topic", "table")]
    if unknown or not fmt.strip():
        raise SinkConfigError(
            f"table.name.format={fmt!r}: the placeholders are ${{topic}} (the whole topic) and ${{table}} (its last "
            "segment), e.g. raw_${table}"
        )
    return fmt


def _mapping(c: Mapping[str, Any], key: str, example: str) -> Mapping[Any, Any]:
    value = c.get(key) or {}
    if not isinstance(value, Mapping):
        raise SinkConfigError(f"{key} must be a mapping, e.g. {example}; got {value!r}")
    return value


def _columns(value: Any) -> tuple[str, ...]:
    """Partition columns: a list, or one string (a comma list), not the string's characters."""
    items = value.split(",") if isinstance(value, str) else list(value or ())
    return tuple(s for s in (str(v).strip() for v in items) if s)


def _flag(c: Mapping[str, Any], key: str, default: bool | None) -> bool | None:
    """true/false (YAML booleans too); anything else is refused rather than taken as false."""
    if key not in c or c[key] is None:
        return default
    value = str(c[key]).strip().lower()
    if value not in ("true", "false"):
        raise SinkConfigError(f"{key}={c[key]!r}: use true or false")
    return value == "true"


def _int(c: Mapping[str, Any], key: str, default: int, minimum: int, allowed: str, upper: int | None = None) -> int:
    raw = c.get(key, default)
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise SinkConfigError(f"{key}={raw!r} must be an integer, {allowed}") from None
    if value < minimum or (upper is not None and value > upper):
        raise SinkConfigError(f"{key}={value} must be {allowed}")
    return value


def _replication_factor(c: Mapping[str, Any]) -> int:
    key = "errors.deadletterqueue.topic.replication.factor"
    value = _int(c, key, -1, -1, "-1 (the broker's default) or 1 and more")
    if value == 0:
        raise SinkConfigError(f"{key}=0: use -1 (the broker's default) or 1 and more")
    return value


def _placeholder(c: Mapping[str, Any]) -> str:
    """As the connector takes it: text, or `hex:` and hex digits for raw bytes."""
    key = "unavailable.value.placeholder"
    value = c.get(key)
    text = unavailable.DEFAULT if value is None else str(value)
    try:
        unavailable.Placeholder.parse(text)
    except ValueError as e:
        raise SinkConfigError(f"{key}: {e}") from None
    return text


def _check_dsn(dsn: str) -> None:
    """Parse the DSN as libpq would, offline: a typo fails here, not in the first batch's tasks."""
    from psycopg import conninfo

    try:
        conninfo.conninfo_to_dict(dsn)
    except Exception as e:
        raise SinkConfigError(
            f"dsn is not a valid libpq connection string ({str(e).strip()}): use postgresql://user:pass@host:5432/db "
            "or 'host=… port=… dbname=… user=…'"
        ) from None


def _tls(c: Mapping[str, Any], target: str) -> dict[str, str]:
    """The PostgreSQL target's TLS keys (libpq's names); an unknown sslmode is refused, and on other targets
    they would be ignored, so they are refused too."""
    try:
        given = libpq_tls.params(c, "")
    except ConfigException as e:
        raise SinkConfigError(str(e)) from None
    if given and target != "postgres":
        raise SinkConfigError(
            f"{', '.join(sorted(given))}: TLS settings of the PostgreSQL target; target={target} does not connect "
            "to a database, remove them"
        )
    return given


def _check_schema(target: str, schema: str) -> None:
    key = "schema" if target == "postgres" else "schema (or namespace)"
    if not schema.strip() or "\x00" in schema:
        raise SinkConfigError(f"{key} must not be empty (or hold a NUL character): name the {target} schema")
    if target == "postgres" and len(schema.encode()) > _PG_MAX_IDENTIFIER:
        raise SinkConfigError(
            f"schema={schema!r} is {len(schema.encode())} bytes; PostgreSQL names are at most {_PG_MAX_IDENTIFIER} "
            "bytes (longer ones are cut): choose a shorter schema"
        )
