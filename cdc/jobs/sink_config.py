"""The job's `sink:` section as the Spark sink's own config (cdc_spark.apply.config.SinkConfig).

As Debezium Server turns its `debezium.sink.*` properties into a sink's config, the job
turns its YAML into the keys `SinkConfig.parse` reads. `cdc run` starts the sink with it,
`cdc validate` checks it, `cdc verify` finds an Iceberg catalog through it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from cdc.api import libpq_tls
from cdc.api.errors import ConfigException
from cdc.jobs.paths import format_path
from cdc.jobs.spec import JobSpec
from cdc.jobs.topics import job_topic_router, topic_prefix


def sink_config(job: JobSpec, captured: Iterable[str] | None = None) -> dict[str, Any]:
    """The Spark sink's config for the job: target, tables, error handling, TLS.

    `captured`: the tables the source captures now (`cdc run` asks the connector), named by the
    job's `sink.table.name.format` too."""
    s = job.sink
    conf: dict[str, Any] = {"target": s["type"], "app.id": f"cdc-{job.name}"}
    if "path" in s:
        conf["path"] = s["path"]
    if "dsn" in s:
        conf["dsn"] = s["dsn"]
    for key in libpq_tls.PARAMS:  # the PostgreSQL target's TLS (sslmode, sslrootcert, sslcert, sslkey, sslpassword)
        if s.get(key) is not None:
            conf[key] = str(s[key])
    if "schema" in s:
        conf["schema"] = s["schema"]
    if s["type"] == "iceberg":
        conf["catalog"] = iceberg_catalog(s)
        conf["namespace"] = s.get("schema", "cdc")
    if "errors.tolerance" in s:
        conf["errors.tolerance"] = s["errors.tolerance"]
    if "errors.deadletter.table" in s:
        conf["errors.deadletterqueue.path"] = s["errors.deadletter.table"]
    if "errors.deadletterqueue.topic.name" in s:
        conf["errors.deadletterqueue.topic.name"] = s["errors.deadletterqueue.topic.name"]
        conf["errors.deadletterqueue.context.headers.enable"] = str(
            s.get("errors.deadletterqueue.context.headers.enable", False)
        ).lower()
    conf["truncate.enabled"] = str(s.get("truncate", "apply") == "apply").lower()
    for key in ("apply.on", "buckets"):  # delta, iceberg: where batches are applied, a new table's key buckets
        if key in s:
            conf[key] = str(s[key])
    placeholder = job.source.get("unavailable.value.placeholder")
    if placeholder is not None:  # the sink keeps the value wherever the connector put its placeholder
        conf["unavailable.value.placeholder"] = str(placeholder)
    tables = job.tables
    prefix = topic_prefix(job)
    route = job_topic_router(job)
    # The sink sees each table's topic as the job's RegexRouter SMTs renamed it; the job names
    # each table it knows (sink.tables, the include list, the captured tables when given).
    names = TableNamer(job, route)
    known = [t.source for t in tables] + literal_include_list(job) + list(captured or ())
    conf["table.names"] = {route(f"{prefix}.{t}"): n for t in known if (n := names.target(t)) is not None}
    fallback = names.sink_format()
    if fallback is not None:
        conf["table.name.format"] = fallback
    conf["partition.by"] = {route(f"{prefix}.{t.source}"): list(t.partition_by) for t in tables if t.partition_by}
    for key, sink_key in (("mode", "table.modes"), ("delete.mode", "table.delete.modes")):
        conf[key] = str(s.get(key, _DEFAULTS[key]))
        conf[sink_key] = _per_table(job, key, route, prefix)
    if "ignore_null_updates" in s:  # AUTO CDC's option, for every table without its own
        conf["ignore.null.updates"] = str(s["ignore_null_updates"]).lower()
    if "schema.change.behavior" in s:  # Flink CDC's option, for every table without its own
        conf["schema.change.behavior"] = str(s["schema.change.behavior"])
    conf["table.options"] = _table_options(job, route, prefix)
    return conf


def iceberg_catalog(sink: Mapping[str, Any]) -> dict[str, Any]:
    """`sink.catalog` as the sink's `catalog` mapping (pyiceberg's catalog properties).

    A string is a SQL catalog's database URL, as before `catalog` took a mapping; a mapping is
    passed on as written (`type: rest`, `uri`, `credential`…). A SQL catalog, the default, keeps
    its database in `<path>/catalog.db` and its tables under `path` unless `uri` and `warehouse`
    say otherwise; other catalogs get nothing from `path` (a REST catalog's `warehouse` is a
    name the server knows, not a directory)."""
    from cdc_spark.apply.iceberg_catalog import IMPL, TYPE, URI, WAREHOUSE, implied_type

    root = os.path.abspath(str(sink.get("path", "lake")))
    given = sink.get("catalog")
    catalog: dict[str, Any] = dict(given) if isinstance(given, Mapping) else {URI: given} if given else {}
    if not catalog.get(URI) and not catalog.get(IMPL) and str(catalog.get(TYPE) or "sql").lower() == "sql":
        catalog[URI] = f"sqlite:///{root}/catalog.db"
    if implied_type(catalog) == "sql" and not catalog.get(WAREHOUSE):
        catalog[WAREHOUSE] = f"file://{root}"
    return catalog


_PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")
_LITERAL_TABLE = re.compile(r"^[A-Za-z0-9_$]+\.[A-Za-z0-9_$]+$")  # an include-list entry that is a name, not a regex


def literal_include_list(job: JobSpec) -> list[str]:
    """The `table.include.list` entries that name one table each (`shop.orders`, not `shop\\..*`)."""
    listed = str(job.source.get("table.include.list") or "")
    return [t.strip() for t in listed.split(",") if _LITERAL_TABLE.match(t.strip())]


class TableNamer:
    """A source table's target table: its `sink.tables.<t>.target`, else the job's
    `sink.table.name.format`, else the sink's default (the topic, non-word characters as `_`).

    Mirrors Debezium JDBC sink's `table.name.format` (`${topic}`), with the topic's parts as
    placeholders too, since the job knows the table behind each topic."""

    def __init__(self, job: JobSpec, route: Callable[[str], str] | None = None) -> None:
        self.prefix = topic_prefix(job)
        self.route = route or job_topic_router(job)
        self.format: str | None = job.sink.get("table.name.format")
        self.targets = {t.source: t.target for t in job.tables if t.target}

    def target(self, source_table: str) -> str | None:
        """The table's name in the target, or None for the sink's default."""
        if source_table in self.targets:
            return self.targets[source_table]
        if self.format is None:
            return None
        db, _, table = source_table.partition(".")
        values = {
            "topic": self.route(f"{self.prefix}.{source_table}"),
            "prefix": self.prefix,
            "db": db,
            "schema": db,
            "table": table,
        }
        return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), self.format)

    def sink_format(self) -> str | None:
        """The sink's own `table.name.format` for a topic the job did not name (a table created
        while the job runs): the job's format where the sink can apply it (${topic}, ${table},
        ${prefix} filled in), else None (the sink's default)."""
        if self.format is None or any(p in ("db", "schema") for p in _PLACEHOLDER.findall(self.format)):
            return None
        return self.format.replace("${prefix}", self.prefix)

    @property
    def needs_tables(self) -> bool:
        """The format uses ${db}/${schema}, which only the job can fill in: each table must be known."""
        return self.format is not None and self.sink_format() is None


class SinkSettingError(ConfigException):
    """A job's sink setting the sink cannot honour, at its YAML path (`cdc validate` shows the line)."""

    def __init__(self, path: tuple[str, ...], message: str) -> None:
        super().__init__(f"{format_path(path)}: {message}", format_path(path))
        self.path = path
        self.detail = message


_DEFAULTS = {"mode": "scd1", "delete.mode": "hard"}


def _per_table(job: JobSpec, key: str, route: Callable[[str], str], prefix: str) -> dict[str, str]:
    """`sink.tables.<t>.<key>` (`mode`, `delete.mode`) by topic: each table's own, over `sink.<key>`.

    scd2 keeps history in Delta only; a table asking for it on another target is refused at its
    own YAML path (the sink would name only its topic)."""
    out = {}
    for name, opts in (job.sink.get("tables") or {}).items():
        if not opts or opts.get(key) is None:
            continue
        value = str(opts[key])
        if key == "mode" and value == "scd2" and job.sink.get("type") != "delta":
            raise SinkSettingError(
                ("sink", "tables", name, key),
                f"mode=scd2 keeps history in Delta only; use mode=scd1 with type {job.sink.get('type')}, or type delta",
            )
        out[route(f"{prefix}.{name}")] = value
    return out


# A table's keys the job layer reads itself; the others of `sink.tables.<t>` are AUTO CDC's options,
# passed to the sink as its `table.options` (cdc_spark/apply/table_options.py parses them).
_JOB_TABLE_KEYS = frozenset(("target", "keys", "mode", "delete.mode", "partition.by"))


def _table_options(job: JobSpec, route: Callable[[str], str], prefix: str) -> dict[str, dict[str, Any]]:
    """`sink.tables.<t>`'s AUTO CDC options (column_list, ignore_null_updates, ...) by topic, each
    table's checked by the sink's own parser here so that a refusal names its YAML path."""
    out = {}
    for name, opts in (job.sink.get("tables") or {}).items():
        given = {k: v for k, v in (opts or {}).items() if k not in _JOB_TABLE_KEYS}
        if not given:
            continue
        _check_table_options(job, str(name), opts, given)
        out[route(f"{prefix}.{name}")] = given
    return out


def _check_table_options(job: JobSpec, name: str, opts: Mapping[str, Any], given: Mapping[str, Any]) -> None:
    """The options of table `name` as the sink parses them, and (with `keys` given) that no column
    list drops a key column; a refusal is a SinkSettingError at `sink.tables.<name>.<option>`."""
    try:
        from cdc_spark.apply.table_options import TableOptionError, TableOptions
    except ImportError:  # no Spark plugin here: `cdc run` reports that itself
        return
    sink = job.sink
    mode = str(opts.get("mode", sink.get("mode", "scd1")))
    default = str(sink.get("ignore_null_updates", False)).lower() == "true"
    try:
        options = TableOptions.parse(given, mode, str(sink.get("type")), default)
        problem = options.key_problem([str(k) for k in opts.get("keys") or ()], name)
        if problem is not None:
            raise problem
    except TableOptionError as e:
        raise SinkSettingError(("sink", "tables", name, e.key), e.detail) from None


# The Spark sink's key names that a job file spells otherwise (sink_config renames them), for
# its messages: a user is told about the key they wrote.
_JOB_SPELLING = (
    (re.compile(r"\berrors\.deadletterqueue\.path\b"), "errors.deadletter.table"),
    (re.compile(r"\btruncate\.enabled\b"), "truncate"),
    (re.compile(r"\bignore\.null\.updates\b"), "ignore_null_updates"),
    (re.compile(r"\btarget=(\w+)"), r"type \1"),
)
_PARTITIONED = re.compile(r"^partition\.by \([^)]*\): ")
_CATALOG = re.compile(r"^(type iceberg(: | needs ))?catalog\b")


def sink_problem(error: Exception, sink: dict[str, Any]) -> tuple[tuple[str, ...], str]:
    """The YAML path and message of a sink config error, in the job file's own key names."""
    path = getattr(error, "path", None)
    if path is not None:
        return tuple(path), str(getattr(error, "detail", error))
    message = str(error)
    for pattern, spelling in _JOB_SPELLING:
        message = pattern.sub(spelling, message)
    if _PARTITIONED.match(message):  # named by the sink's table names; the user wrote sink.tables.<t>
        tables = [name for name, opts in (sink.get("tables") or {}).items() if (opts or {}).get("partition.by")]
        if tables:
            return ("sink", "tables", tables[0], "partition.by"), _PARTITIONED.sub("", message)
    if _CATALOG.match(message):  # the sink's catalog.<key> is the job's sink.catalog.<key>
        return ("sink", "catalog") if "catalog" in sink else ("sink",), message
    key = re.match(r"^([a-z][a-z._]*)[=:]", message)
    if key and key.group(1) in sink:
        return ("sink", key.group(1)), message
    return ("sink",), message
