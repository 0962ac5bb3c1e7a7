"""`cdc plan job.yaml`: a dry run of a job file against the job's stored state.

Changing a job's include lists or its `snapshot.mode` has effects that show only at the next
start: a table added after the snapshot is streamed without its existing rows (unless
`snapshot.new.tables=parallel` reads them incrementally), a dropped table keeps its topic and its
target table as they are, and `snapshot.mode=always` re-reads everything while `initial` resumes
streaming. A plan says all of that beforehand, per table, from what the connectors themselves
decide at start (cdc_mysql/task.py and cdc_postgres/task.py, `_plan`):

- which tables the job file captures now (the connector's `matching_collections`, asked of the
  database; with --offline the job file's filters are matched against the tables the stored
  state and the job file name) against the tables the stored state shows captured
  (cdc/jobs/plan_state.py): add, drop or keep;
- what the next start does with the stored offset and the snapshot mode (`next_start`), and so
  whether each table is snapshotted (initial), read by an incremental snapshot, or not at all;
- which topics and target tables do not exist yet (they are created at the table's first record);
- what each snapshot mode would do to the stored offset (`mode_effects`).

Nothing is written and no lock is taken: the job may be running.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from cdc.api.errors import ConfigException
from cdc.api.retention import KEPT, LOST, UNLIMITED
from cdc.jobs.plan_state import StoredState, read_state
from cdc.jobs.sink_config import TableNamer, literal_include_list
from cdc.jobs.source_probe import ask_source
from cdc.jobs.spec import JobSpec, source_family
from cdc.jobs.topics import job_topic_router, topic_prefix

INITIAL, INCREMENTAL, NONE = "initial", "incremental", "none"
ADD, DROP, KEEP = "add", "drop", "keep"

#: The built-in snapshot modes of each source family, in the order the connectors' READMEs list them.
MODES: Mapping[str, tuple[str, ...]] = {
    "mysql": ("initial", "initial_only", "when_needed", "no_data", "recovery", "always"),
    "postgres": ("initial", "initial_only", "when_needed", "no_data", "always"),
}
# The container the include lists name besides tables (cdc_debezium.signals.new_tables.CapturedFilters).
_CONTAINER_KEYS: Mapping[str, tuple[str, str]] = {
    "mysql": ("database.include.list", "database.exclude.list"),
    "postgres": ("schema.include.list", "schema.exclude.list"),
}


# -- what the next start does ---------------------------------------------------------------------
@dataclass(frozen=True)
class Start:
    """The next start's decision, as the connector's own `_plan` makes it.

    `kind`: snapshot (every captured table from the start), resume (an interrupted initial snapshot
    goes on), schema_only (no rows: streaming from the current position), recovery (MySQL: the schema
    history rebuilt, then streaming from the offset), stream (from the stored offset), idle
    (initial_only, done: nothing runs), fail (the start is refused)."""

    kind: str
    reason: str


def _truthy_snapshot(value: Any) -> bool:
    """The offset's `snapshot` key as the connectors read it (`true`, `"INITIAL"`, ...; not `"false"`)."""
    return value is True or (isinstance(value, str) and value.strip().lower() not in ("false", ""))


#: Where the database stands with the stored offset's position (None: not asked, or it cannot say).
KEPT_POSITION = "kept"  # the server holds it
MOVED_POSITION = "moved"  # MySQL: its binlog file was purged, but the GTID set resumes it elsewhere
LOST_POSITION = "lost"  # purged past the GTIDs, an invalidated slot, a lineage break: no resume


def next_start(family: str, mode: str, offset: Mapping[str, Any] | None, position: str | None) -> Start:
    """What a start under `mode` does with the stored `offset` (None: never ran or reset), the
    stored position being `position` (KEPT_POSITION, MOVED_POSITION, LOST_POSITION, or None)."""
    if family == "mysql":
        return _mysql_start(mode, offset, position)
    return _postgres_start(mode, offset, position == LOST_POSITION)


def _fresh(mode: str, no_rows: tuple[str, ...]) -> Start:
    if mode in no_rows:
        return Start("schema_only", f"no stored offset and snapshot.mode={mode}: no rows are read")
    return Start("snapshot", f"no stored offset: snapshot.mode={mode} takes the initial snapshot")


def _lost_start(mode: str, why: str) -> Start:
    if mode == "when_needed":
        return Start("snapshot", f"{why}: snapshot.mode=when_needed takes a new snapshot")
    return Start("fail", f"{why}: the start is refused; set snapshot.mode=when_needed or reset the offsets")


def _mysql_start(mode: str, offset: Mapping[str, Any] | None, position: str | None) -> Start:
    """cdc_mysql/task.py `_plan`, from the offset alone (and `position`, when the database was asked)."""
    if not offset:
        return _fresh(mode, ("no_data", "recovery"))
    if mode == "always":
        return Start("snapshot", "snapshot.mode=always snapshots at every start")
    broken = offset.get("lineage_break")
    gone = f"the stream stopped on a binlog lineage break ({broken})" if broken else None
    if position == LOST_POSITION and gone is None:
        gone = "the stored position is no longer on the server"
    if _truthy_snapshot(offset.get("snapshot")) and mode in ("initial", "initial_only", "when_needed"):
        purged = gone or ("its binlog file was purged" if position == MOVED_POSITION else None)
        if isinstance(offset.get("snapshot_tables_done"), list) and purged is None:
            return Start("resume", "the stored offset is an interrupted initial snapshot's: it goes on")
        why = purged or "its offset has no snapshot progress (snapshot_tables_done)"
        return Start("snapshot", f"the interrupted snapshot cannot be resumed ({why}): snapshotting again")
    if mode == "initial_only":
        return Start("idle", "snapshot.mode=initial_only and the snapshot is complete: nothing runs")
    if gone is not None:
        return _lost_start(mode, gone)
    if position == MOVED_POSITION and mode == "when_needed":
        return Start("snapshot", "the stored offset's binlog file was purged: snapshot.mode=when_needed snapshots")
    by_gtid = " (by its GTID set: its binlog file was purged)" if position == MOVED_POSITION else ""
    if mode == "recovery":
        return Start(
            "recovery", f"snapshot.mode=recovery rebuilds the schema history, then streams from the offset{by_gtid}"
        )
    return Start("stream", f"streams from the stored offset{by_gtid}")


def _postgres_start(mode: str, offset: Mapping[str, Any] | None, lost: bool | None) -> Start:
    """cdc_postgres/task.py `_plan`, from the offset alone (and `lost`: the slot gone or past it)."""
    if not offset:
        return _fresh(mode, ("no_data",))
    snapshot = bool(offset.get("snapshot"))
    completed = (
        bool(offset.get("snapshot_completed"))
        or (not snapshot and offset.get("lsn") is not None)
        or bool(offset.get("last_snapshot_record"))
    )
    streaming = not snapshot and offset.get("lsn_commit") is not None
    if mode == "initial_only" and completed:
        return Start("idle", "snapshot.mode=initial_only and the snapshot is complete: nothing runs")
    if (streaming or completed) and mode != "always" and lost:
        return _lost_start(mode, "the slot no longer holds the stored position")
    if mode == "always":
        return Start("snapshot", "snapshot.mode=always snapshots at every start (the slot is recreated)")
    if mode in ("initial", "initial_only", "when_needed") and not completed and not streaming:
        if snapshot and isinstance(offset.get("snapshot_tables_done"), list) and not lost:
            return Start("resume", "the stored offset is an interrupted initial snapshot's: it goes on")
        if snapshot:
            return Start("snapshot", "the interrupted snapshot cannot be resumed: snapshotting again")
        return Start("snapshot", "the stored offset has no completed snapshot: snapshotting")
    return Start("stream", "streams from the stored offset")


@dataclass(frozen=True)
class ModeEffect:
    """What a start under one snapshot mode would do, given the stored offset."""

    mode: str
    current: bool  # the job file's mode
    start: str  # Start.kind
    snapshot: str  # initial / none
    offsets: str  # what becomes of the stored offset


_EFFECTS: Mapping[str, tuple[str, str]] = {
    "snapshot": (INITIAL, "replaced by the new snapshot's; streaming starts at its position"),
    "resume": (INITIAL, "kept: the snapshot goes on from its progress keys, then streams from its first position"),
    "schema_only": (NONE, "a first offset is stored at the current position: changes from now on, no existing rows"),
    "recovery": (NONE, "kept: the schema history is rebuilt from the current schema, streaming resumes from it"),
    "stream": (NONE, "kept: streaming resumes from it"),
    "idle": (NONE, "kept unchanged: nothing runs"),
    "fail": (NONE, "kept unchanged: the start is refused"),
}


def mode_effects(family: str, current: str, offset: Mapping[str, Any] | None, position: str | None) -> list[ModeEffect]:
    """Each built-in snapshot mode's effect on the stored offset at the next start."""
    out = []
    for mode in MODES[family]:
        start = next_start(family, mode, offset, position)
        snapshot, offsets = _EFFECTS[start.kind]
        if start.kind == "snapshot" and not offset:
            offsets = "the snapshot stores the first offset; streaming starts at its position"
        if start.kind in ("snapshot", "resume") and mode == "initial_only":
            offsets = offsets.split(";")[0] + "; initial_only stops after the snapshot, without streaming"
            offsets += " (the slot is dropped)" if family == "postgres" else ""
        elif start.kind == "snapshot" and mode == "always" and family == "postgres":
            offsets += " (the slot is recreated)"
        if start.kind == "stream" and mode == "when_needed" and position is None:
            offsets += "; a new snapshot instead if the position turns out lost (not checked)"
        out.append(ModeEffect(mode, mode == current, start.kind, snapshot, offsets))
    return out


# -- tables ----------------------------------------------------------------------------------------
@dataclass
class TableRow:
    """One table's line of the plan."""

    table: str
    action: str  # add / drop / keep
    snapshot: str  # initial / incremental / none
    reason: str
    topic: str
    topic_created: bool | None = None  # None: not checked
    target: str | None = None
    target_created: bool | None = None  # None: not checked
    stored_traces: list[str] = field(default_factory=list)  # why the stored state counts it captured


def stored_filters_capture(family: str, offset: Mapping[str, Any] | None, tables: Iterable[str]) -> set[str] | None:
    """The tables of `tables` the stored offset's filters capture (`snapshot.new.tables=parallel`
    stamps them on every offset), or None when the offset carries no filters."""
    from cdc_debezium.signals.new_tables import CapturedFilters

    if not offset:
        return None
    filters = CapturedFilters.from_offset(offset, _CONTAINER_KEYS[family])
    if not filters.patterns:
        return None
    pairs: dict[tuple[str, str], str] = {}
    for table in tables:
        container, _, name = table.partition(".")
        if name:
            pairs[(container, name)] = table
    try:
        return {pairs[p] for p in filters.captures(pairs)}
    except ConfigException:  # an edited offset with a bad pattern: not evidence
        return None


def table_rows(
    captured_now: Iterable[str],
    captured_before: Mapping[str, Iterable[str]],
    start: Start,
    offset: Mapping[str, Any] | None,
    new_tables: bool,
    offset_has_filters: bool,
) -> list[TableRow]:
    """The plan's rows without topics and targets: action and snapshot of each table.

    `captured_before`: each table the stored state shows captured, with the traces that show it."""
    now = set(captured_now)
    before = {t: sorted(set(traces)) for t, traces in captured_before.items()}
    queued = _incremental_queue(offset)
    done = {str(t) for t in ((offset or {}).get("snapshot_tables_done") or [])}
    rows = []
    for table in sorted(now | set(before)):
        action = KEEP if table in now and table in before else ADD if table in now else DROP
        if action == DROP:
            snapshot, reason = NONE, "no longer captured: not read; its topic and target table stay as they are"
        else:
            snapshot, reason = _snapshot(table, action, start, queued, done, offset, new_tables, offset_has_filters)
        rows.append(TableRow(table, action, snapshot, reason, "", stored_traces=before.get(table, [])))
    return rows


def _incremental_queue(offset: Mapping[str, Any] | None) -> list[str]:
    from cdc.jobs.incremental_status import queued_tables

    return queued_tables(dict(offset) if offset else None)


def _snapshot(
    table: str,
    action: str,
    start: Start,
    queued: list[str],
    done: set[str],
    offset: Mapping[str, Any] | None,
    new_tables: bool,
    offset_has_filters: bool,
) -> tuple[str, str]:
    kind = start.kind
    if kind == "snapshot":
        return INITIAL, start.reason
    if kind == "resume":
        if table in done:
            return NONE, "read by the interrupted snapshot before it stopped"
        if table == (offset or {}).get("snapshot_table"):
            return INITIAL, "the interrupted snapshot resumes in it, after its last key"
        return INITIAL, "the interrupted snapshot reads it"
    if kind == "schema_only":
        return NONE, start.reason + "; changes are streamed from now on"
    if kind in ("idle", "fail"):
        return NONE, start.reason
    if table in queued:
        return INCREMENTAL, "the running incremental snapshot goes on (stored in the offset)"
    if action == KEEP:
        return NONE, start.reason
    if new_tables and offset_has_filters:
        return INCREMENTAL, "snapshot.new.tables=parallel: read by an incremental snapshot while streaming goes on"
    if new_tables:
        return NONE, (
            "added, but the stored offset carries no filters (its run had snapshot.new.tables off): streamed from "
            f"the offset on without its existing rows; cdc signal <job.yaml> execute-snapshot --tables {table}"
        )
    return NONE, (
        "added after the snapshot: streamed from the stored offset on without its existing rows; "
        f"cdc signal <job.yaml> execute-snapshot --tables {table}, or set snapshot.new.tables=parallel"
    )


# -- the whole plan --------------------------------------------------------------------------------
@dataclass
class Plan:
    job: str
    family: str
    snapshot_mode: str
    snapshot_new_tables: bool
    state_dir: str
    running: bool
    pid: int | None
    stored_read: bool
    stored_note: str | None
    stored_offset: dict[str, Any] | None
    stored_sources: list[str]
    database_checked: bool
    database_note: str | None
    targets_checked: bool
    targets_note: str | None
    stored_position: str | None  # KEPT_POSITION, MOVED_POSITION, LOST_POSITION; None: not asked
    start: Start
    tables: list[TableRow]
    modes: list[ModeEffect]

    def to_json(self) -> dict[str, Any]:
        """A stable document (`version` changes when a key changes meaning)."""
        return {"version": 1, **asdict(self)}


def _connector_view(job: JobSpec, family: str) -> tuple[str, bool, Callable[[str], bool], Any]:
    """(snapshot.mode as the connector normalises it, snapshot.new.tables=parallel, the job file's
    table filter on `db.table`, the connector's parsed config)."""
    from cdc_debezium.signals.config import parse_new_tables_mode

    config = job.connector_config()
    if family == "mysql":
        from cdc_mysql.config import MySqlConnectorConfig

        mysql = MySqlConnectorConfig(config)

        def mysql_captures(table: str) -> bool:
            db, _, name = table.partition(".")
            return mysql.captures_table(db, name)

        return mysql.snapshot_mode, parse_new_tables_mode(config), mysql_captures, mysql
    from cdc_postgres.config import PostgresConnectorConfig

    pg = PostgresConnectorConfig(config)

    def pg_captures(table: str) -> bool:
        return pg.schema_filter(table.split(".", 1)[0]) and pg.table_filter(table)

    return pg.snapshot_mode, parse_new_tables_mode(config), pg_captures, pg


def make_plan(job: JobSpec, offline: bool = False) -> Plan:
    """The plan of `job` against its stored state; under `offline` no server is asked (the embedded
    log, a local file, is still read)."""
    family = source_family(job.connector_config()["connector.class"])
    if family is None:
        raise ConfigException(
            "cdc plan knows the snapshots of the MySQL/MariaDB and PostgreSQL connectors; "
            f"{job.source.get('connector.class')!r} is neither",
            "source.connector.class",
        )
    mode, new_tables, captures, parsed = _connector_view(job, family)
    stored = read_state(job, offline)
    offset = stored.offset
    database_note: str | None = None
    captured_now: list[str] | None = None
    if not offline:
        found, error = ask_source(job, lambda c, config: list(c.matching_collections(config)))
        if error is None and found is not None:
            captured_now = [str(t) for t in found]
            if family == "postgres":
                _publication_traces(job, parsed, stored)
        else:
            database_note = (
                f"the database did not answer ({error}): the job file's filters are matched against the tables known"
            )
    else:
        database_note = "not asked (--offline): the job file's filters are matched against the tables known"
    if captured_now is None:
        candidates = set(stored.captured) | set(literal_include_list(job)) | {t.source for t in job.tables}
        captured_now = sorted(t for t in candidates if "." in t and captures(t))
    before: dict[str, set[str]] = {t: set(v) for t, v in stored.captured.items()}
    exact = stored_filters_capture(family, offset, set(captured_now) | set(before))
    if exact is not None:
        before = {t: {"offset filters", *before.get(t, ())} for t in exact}
        stored.sources.insert(0, "offset filters (snapshot.new.tables)")
    position = None if offline else _position(job, offset)
    start = next_start(family, mode, offset, position)
    rows = table_rows(captured_now, before, start, offset, new_tables, exact is not None)
    _topics(job, stored, rows)
    targets_note = _targets(job, rows, offline)
    return Plan(
        job.name, family, mode, new_tables, stored.state_dir, stored.running, stored.pid, stored.read,
        stored.note, offset, stored.sources, captured_now is not None and database_note is None, database_note,
        targets_note is None, targets_note, position, start, rows, mode_effects(family, mode, offset, position),
    )  # fmt: skip


def _publication_traces(job: JobSpec, parsed: Any, stored: StoredState) -> None:
    """PostgreSQL under publication.autocreate.mode=filtered: the publication is set to the captured
    tables at every start, so it names the tables of the last start (read-only query)."""
    if getattr(parsed, "publication_autocreate_mode", "") != "filtered":
        return
    import psycopg

    from cdc.jobs.source_db import postgres_params

    name = parsed.publication_name
    try:
        with psycopg.connect(**postgres_params(job.source, connect_timeout=10)) as conn:
            rows = conn.execute(
                "SELECT schemaname, tablename FROM pg_publication_tables WHERE pubname = %s", (name,)
            ).fetchall()
    except Exception:  # the connector's own question answered: this trace is a bonus
        return
    for schema, table in rows:
        stored.saw(f"{schema}.{table}", f"publication {name}")
    stored.sources.append(f"publication {name}")


def _position(job: JobSpec, offset: Mapping[str, Any] | None) -> str | None:
    """Where the database stands with the stored offset's position, from the connector's
    `position_retention` (as `cdc status` asks it); None when it cannot say."""
    if not offset:
        return None
    retention, _ = ask_source(job, lambda c, config: c.position_retention(config, dict(offset)))
    state = getattr(retention, "state", None)
    if state == LOST:
        return LOST_POSITION
    if state not in (KEPT, UNLIMITED):
        return None
    # MySQL resumes from a purged binlog file by its GTID set: the estimate then follows the
    # server's oldest file instead of the offset's own (cdc_mysql/retention.py).
    subject = getattr(retention, "subject", None)
    if "file" in offset and subject not in (None, f"binlog {offset['file']}"):
        return MOVED_POSITION
    return KEPT_POSITION


def _topics(job: JobSpec, stored: StoredState, rows: list[TableRow]) -> None:
    """Each row's topic (after the job's RegexRouter SMTs) and whether it would be created."""
    prefix, route = topic_prefix(job), job_topic_router(job)
    for row in rows:
        row.topic = route(f"{prefix}.{row.table}")
        if row.action == DROP:
            row.topic_created = False
        elif stored.read or stored.fresh:
            row.topic_created = row.topic not in stored.topics


def _targets(job: JobSpec, rows: list[TableRow], offline: bool) -> str | None:
    """Each row's target table and whether it would be created (None when not checked); the note
    saying why they were not checked, or None."""
    from cdc.jobs.verify.target import table_name

    kind = str(job.sink.get("type"))
    prefix, route = topic_prefix(job), job_topic_router(job)
    namer = TableNamer(job, route)
    for row in rows:
        named = namer.target(row.table)
        if kind == "parquet":
            row.target = row.topic  # the changelog is partitioned by topic
        else:
            row.target = table_name(named) if named is not None else table_name(route(f"{prefix}.{row.table}"))
    if offline:
        return "not checked (--offline)"
    try:
        exists = _target_checker(job)
    except Exception as e:  # the warehouse or catalog did not answer: say so, plan the rest
        return f"not checked: {' '.join(str(e).split()) or type(e).__name__}"
    try:
        for row in rows:
            row.target_created = False if row.action == DROP else not exists(row.target or "")
    except Exception as e:
        for row in rows:
            row.target_created = None
        return f"not checked: {' '.join(str(e).split()) or type(e).__name__}"
    return None


def _target_checker(job: JobSpec) -> Callable[[str], bool]:
    """`exists(table)` for the job's sink, with the target's own library, reading only."""
    s = job.sink
    kind = s["type"]
    if kind == "delta":
        from deltalake import DeltaTable

        root = str(s["path"])
        return lambda table: bool(DeltaTable.is_deltatable(os.path.join(root, table)))
    if kind == "parquet":
        import glob

        root = str(s["path"])
        return lambda topic: bool(
            glob.glob(os.path.join(glob.escape(root), "batch_id=*", f"topic={glob.escape(topic)}"))
        )
    if kind == "iceberg":
        from cdc.jobs.sink_config import sink_config
        from cdc_spark.apply.iceberg_catalog import open_catalog, parse_catalog

        conf = sink_config(job)
        spec = parse_catalog(conf["catalog"])
        if spec.sqlite_file is not None and not os.path.exists(spec.sqlite_file):
            return lambda table: False  # no catalog file yet: no table (opening it would create one)
        catalog, namespace = open_catalog(spec), conf["namespace"]
        return lambda table: bool(catalog.table_exists((namespace, table)))
    if kind == "postgres":
        import psycopg

        from cdc.jobs.source_db import sink_conninfo

        schema = str(s.get("schema", "public"))
        conn = psycopg.connect(sink_conninfo(s), connect_timeout=10, autocommit=True)

        def exists(table: str) -> bool:
            ident = psycopg.sql.Identifier(schema, table).as_string(conn)
            return conn.execute("SELECT to_regclass(%s) IS NOT NULL", (ident,)).fetchone()[0]  # type: ignore[index]

        return exists
    raise ConfigException(f"sink.type {kind!r}: cdc plan checks delta, iceberg, parquet and postgres", "sink.type")


# -- rendering -------------------------------------------------------------------------------------
def _yes_no(value: bool | None) -> str:
    return "not checked" if value is None else "yes" if value else "no"


def _offset_line(plan: Plan) -> str:
    offset = plan.stored_offset
    if offset is None:
        return f"stored offset: none ({plan.stored_note or 'the job never ran, or its offsets were reset'})"
    where = (
        f"{offset.get('file')}:{offset.get('pos')}"
        if "file" in offset
        else f"lsn {offset.get('lsn', offset.get('lsn_proc'))}"
    )
    state = "an interrupted initial snapshot" if _truthy_snapshot(offset.get("snapshot")) else "streaming"
    return f"stored offset: {where} ({state})"


def render(plan: Plan, width: int | None = None) -> str:
    """The plan as text: a few lines on the job and its state, the table, the snapshot modes."""
    import io

    from rich.console import Console
    from rich.table import Table

    buffer = io.StringIO()
    console = Console(file=buffer, width=width or 160, no_color=True, highlight=False, soft_wrap=False)
    running = f"; the job is running (pid {plan.pid}): the plan applies at its next start" if plan.running else ""
    console.print(
        f"plan for job {plan.job} ({plan.family}): snapshot.mode={plan.snapshot_mode}, "
        f"snapshot.new.tables={'parallel' if plan.snapshot_new_tables else 'off'}{running}"
    )
    console.print(_offset_line(plan))
    known = ", ".join(plan.stored_sources) if plan.stored_sources else "nothing stored"
    console.print(f"captured before, from: {known}")
    console.print(
        "database: "
        + ("asked which tables the include lists match" if plan.database_checked else plan.database_note or "")
    )
    if plan.targets_note:
        console.print(f"target tables: {plan.targets_note}")
    if plan.stored_offset is not None:
        position = {
            KEPT_POSITION: "still on the server",
            MOVED_POSITION: "its binlog file was purged; the GTID set resumes it",
            LOST_POSITION: "lost",
        }.get(plan.stored_position or "", "not checked")
        console.print(f"stored position: {position}")
    console.print(f"next start: {plan.start.kind}: {plan.start.reason}")
    table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
    for column in ("table", "action", "snapshot", "topic", "new topic", "target", "new target", "why"):
        table.add_column(column, overflow="fold")
    for r in plan.tables:
        table.add_row(
            r.table, r.action, r.snapshot, r.topic, _yes_no(r.topic_created), r.target or "-",
            _yes_no(r.target_created), r.reason,
        )  # fmt: skip
    console.print()
    if plan.tables:
        console.print(table)
    else:
        console.print("no tables: the include lists match none (and the stored state shows none)")
    console.print()
    console.print("snapshot.mode at the next start, with the stored offset:")
    modes = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
    for column in ("mode", "next start", "snapshot", "stored offset"):
        modes.add_column(column, overflow="fold")
    for m in plan.modes:
        modes.add_row(f"{m.mode} (this job)" if m.current else m.mode, m.start, m.snapshot, m.offsets)
    console.print(modes)
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines())
