"""The Spark sink's own config checks (cdc_spark.apply.config.SinkConfig) at validate time."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import Any

from cdc.api.errors import ConfigException
from cdc.jobs.sink_config import TableNamer, iceberg_catalog, literal_include_list, sink_config, sink_problem
from cdc.jobs.spec import JobSpec
from cdc.jobs.topics import job_topic_router, topic_prefix
from cdc.jobs.validation.problems import Collector, did_you_mean


def check_sink(job: dict[str, Any], out: Collector) -> None:
    """The Spark sink's own checks (tolerance without a dead-letter target, partitioning a
    target that cannot be partitioned, …) at validate time rather than mid-run."""
    try:
        from cdc_spark.apply.config import SinkConfig
        from cdc_spark.apply.errors import SinkConfigError
    except ImportError:
        return  # no Spark plugin here: `cdc run` reports that itself
    spec = JobSpec(job["name"], job["source"], [], job.get("transport") or {}, job["sink"], job.get("spark") or {})
    try:
        SinkConfig.parse(sink_config(spec))
    except (SinkConfigError, ConfigException) as e:  # at its YAML path, in the job's key names
        out.add(*sink_problem(e, job["sink"]))


# Transforms that rename topics: sink.tables is then keyed by the routed names, not the source's.
_ROUTERS = ("RegexRouter", "ContentBasedRouter", "ByLogicalTableRouter", "TimestampRouter", "TopicRegexRouter")
_LISTED = 12  # captured tables named in the message; the rest are counted


def routes_topics(job: dict[str, Any]) -> bool:
    """A transform renames topics: sink.tables is then keyed by the routed names, not the source's."""
    return any(str(t.get("type", "")).rsplit(".", 1)[-1] in _ROUTERS for t in job.get("transforms") or [])


def check_sink_tables(job: dict[str, Any], captured: list[str], out: Collector) -> None:
    """Each sink.tables entry names a table the source captures: an entry for a table it does not
    (a typo, a table outside table.include.list) would configure nothing and never get a row."""
    tables = (job.get("sink") or {}).get("tables") or {}
    if not tables or routes_topics(job):
        return
    known = {c.lower(): c for c in captured}
    listed = ", ".join(captured[:_LISTED]) + (f" and {len(captured) - _LISTED} more" if len(captured) > _LISTED else "")
    for name in tables:
        if str(name) in captured or str(name).lower() in known:
            continue
        out.add(
            ("sink", "tables", name),
            f"table {name!r} is not captured by the source (captured: {listed or 'none'})"
            f"{did_you_mean(str(name), captured)}; fix the name, or capture it with table.include.list "
            "(a table the source user cannot SELECT is not listed either)",
        )


def check_sink_writable(job: dict[str, Any], out: Collector) -> None:
    """The target reachable and writable by this user, before Spark starts: a lake directory
    that exists or can be created and takes a file (a temporary one, removed at once), or a
    PostgreSQL user who may CREATE in the target schema and INSERT/UPDATE/DELETE the target
    tables that exist. The Kafka Connect JDBC sink finds these only at its first write."""
    sink = job.get("sink") or {}
    kind = sink.get("type")
    if kind == "iceberg" and not _iceberg_under_path(sink):
        return  # a REST, Glue, Hive… catalog: the catalog says where its tables go, path is not used
    if kind in ("delta", "parquet", "iceberg"):
        path = str(sink.get("path") or ("lake" if kind == "iceberg" else ""))
        if path and (problem := lake_problem(path)):
            out.add(("sink", "path"), problem)
    elif kind == "postgres" and sink.get("dsn"):
        for where, message in warehouse_problems(job):
            out.add(where, message)


def _iceberg_under_path(sink: dict[str, Any]) -> bool:
    """The Iceberg sink's catalog keeps its tables under `path` (the default SQL catalog does)."""
    try:
        catalog = iceberg_catalog(sink)
    except ImportError:  # no Spark plugin here: `cdc run` reports that itself
        return True
    return str(catalog.get("warehouse", "")).startswith("file://" + os.path.abspath(str(sink.get("path", "lake"))))


def lake_problem(path: str) -> str | None:
    """Why the lake directory `path` cannot be written (None: it can), in one line with the fix.
    Nothing is left behind: a missing directory is not created, its nearest existing parent is
    tried instead."""
    if path.startswith("file://"):
        path = path[len("file://") :]
    elif "://" in path:
        return None  # an object store: its credentials are the executors', checked at run time
    target = Path(path).absolute()
    probe = target
    while not probe.exists():  # the nearest existing ancestor (the root always exists)
        probe = probe.parent
    if not probe.is_dir():
        if probe == target:
            return f"{target} is a file, not a directory; point path at a directory (one sub-directory per table)"
        return f"cannot create {target}: {probe} is a file, not a directory; choose a path under a directory"
    try:
        fd, name = tempfile.mkstemp(prefix=".cdc-validate-", dir=probe)
    except OSError as e:
        what = "write to" if probe == target else f"create {target} under"
        return (
            f"cannot {what} {probe} ({e.strerror or e}); give this user write access to it "
            f"(e.g. chown or chmod u+w {probe}) or choose another path"
        )
    os.close(fd)
    os.unlink(name)
    return None


def warehouse_problems(job: dict[str, Any]) -> list[tuple[tuple[str, ...], str]]:
    """The PostgreSQL target's privileges: CREATE in the schema (on the database when the schema
    is yet to be created), or else every known target table already there; INSERT, UPDATE and
    DELETE on the target tables that exist. An unreachable warehouse is check_reachable's."""
    import psycopg

    from cdc.jobs.source_db import sink_conninfo

    sink = job["sink"]
    schema = str(sink.get("schema") or "public")
    at = ("sink", "schema") if "schema" in sink else ("sink", "dsn")
    tables = _target_tables(job)
    try:
        conn = psycopg.connect(sink_conninfo(sink), connect_timeout=3, autocommit=True)
    except (psycopg.Error, ConfigException):
        return []
    problems: list[tuple[tuple[str, ...], str]] = []
    with conn:
        user, has_schema, can_create, can_create_db = conn.execute(
            "SELECT current_user, n.oid IS NOT NULL, has_schema_privilege(n.oid, 'CREATE'),"
            " has_database_privilege(current_database(), 'CREATE')"
            " FROM (SELECT 1) one LEFT JOIN pg_namespace n ON n.nspname = %s",
            (schema,),
        ).fetchone()
        existing = {
            r[0]
            for r in conn.execute(
                "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                " WHERE n.nspname = %s AND c.relkind IN ('r', 'p')",
                (schema,),
            )
        }
        if not has_schema and not can_create_db:
            problems.append(
                (
                    at,
                    f'schema "{schema}" does not exist and user "{user}" may not create it; create it '
                    f'(CREATE SCHEMA "{schema}" AUTHORIZATION "{user}") or GRANT CREATE ON DATABASE to "{user}"',
                )
            )
        elif has_schema and not can_create:
            missing = [t for t in tables if t not in existing]
            if missing or not tables:
                which = f"tables {', '.join(missing[:5])} do not exist yet" if missing else "the tables are not known"
                problems.append(
                    (
                        at,
                        f'user "{user}" may not CREATE in schema "{schema}" and {which}; '
                        f'GRANT CREATE ON SCHEMA "{schema}" TO "{user}"',
                    )
                )
        for table, source in tables.items():
            if table not in existing:
                continue
            lacking = [
                p
                for p in ("INSERT", "UPDATE", "DELETE")
                if not conn.execute(
                    "SELECT has_table_privilege(format('%%I.%%I', %s::text, %s::text), %s)", (schema, table, p)
                ).fetchone()[0]
            ]
            if lacking:
                where = ("sink", "tables", source) if source in (sink.get("tables") or {}) else at
                problems.append(
                    (
                        where,
                        f'user "{user}" lacks {", ".join(lacking)} on table "{schema}"."{table}"; '
                        f'GRANT INSERT, UPDATE, DELETE ON "{schema}"."{table}" TO "{user}"',
                    )
                )
    return problems


def _target_tables(job: dict[str, Any]) -> dict[str, str]:
    """target table → source table, for the tables the job names (sink.tables, a literal
    table.include.list), as the sink names them (its default: the topic, non-word characters as _)."""
    spec = JobSpec(job["name"], job["source"], job.get("transforms") or [], job.get("transport") or {}, job["sink"])
    route = job_topic_router(spec)
    prefix = topic_prefix(spec)
    names = TableNamer(spec, route)
    out = {}
    for source in [*(job["sink"].get("tables") or {}), *literal_include_list(spec)]:
        name = names.target(source) or route(f"{prefix}.{source}")
        out.setdefault(re.sub(r"[^A-Za-z0-9_]", "_", name), source)
    return out
