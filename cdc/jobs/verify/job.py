"""`cdc verify`: which tables to check, which columns and keys, then compare each table."""

from __future__ import annotations

import re
from collections.abc import Callable, Container
from dataclasses import dataclass

from cdc.api.errors import ConfigException
from cdc.jobs.sink_config import TableNamer
from cdc.jobs.spec import JobSpec
from cdc.jobs.topics import topic_prefix, topic_router
from cdc.jobs.verify.compare import TableResult, compare
from cdc.jobs.verify.key_range import OPTION, ColumnRange, KeyRange, RangeUnusable, bind
from cdc.jobs.verify.normalize import Column
from cdc.jobs.verify.online import compare_at
from cdc.jobs.verify.scope import TableScope, draw_sample
from cdc.jobs.verify.snapshot import Point
from cdc.jobs.verify.source import SourceReader, SourceTable, filters, open_source
from cdc.jobs.verify.target import VALID_TO, TargetReader, open_target, table_name
from cdc_debezium.key_columns import KeyColumns

_MAPPED = re.compile(r"^column\.(mask\.with\.\d+\.chars|mask\.hash\..+|truncate\.to\.\d+\.chars)$")


def _regex(pattern: str, key: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern.strip(), re.IGNORECASE)
    except re.error as e:
        raise ConfigException(f"source.{key}: {pattern!r} is not a valid regular expression ({e})", key) from None


def _mapped_columns(config: dict[str, str]) -> list[re.Pattern[str]]:
    """Columns the connector masks or truncates (their values differ from the source by design)."""
    out: list[re.Pattern[str]] = []
    for key, value in config.items():
        if _MAPPED.match(key):
            out.extend(_regex(p, key) for p in value.split(",") if p.strip())
    return out


class Verifier:
    def __init__(
        self, job: JobSpec, progress: Callable[[str], None] = lambda m: None, key_range: KeyRange | None = None
    ) -> None:
        """`key_range`: compare only the keys in that range of each table's first key column (key_range.py);
        the tables it applies to are in `ranges`, the others, not compared, in `range_skipped`."""
        self.job = job
        self.key_range = key_range
        self.ranges: dict[str, ColumnRange] = {}
        self.range_skipped: dict[str, str] = {}
        self.config = job.connector_config()
        self.progress = progress
        self.prefix = topic_prefix(job)
        self.specs = {t.source: t for t in job.tables}
        self.route = topic_router(self.config)
        self.namer = TableNamer(job, self.route)
        self.source: SourceReader = open_source(self.config)
        try:
            self.target: TargetReader = open_target(job)
        except BaseException:
            self.source.close()
            raise

    def close(self) -> None:
        self.source.close()
        self.target.close()

    def __enter__(self) -> Verifier:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def _unfilled_defaults(self) -> bool:
        """Whether the target cannot hold a DEFAULT the database wrote into its rows without events
        (`ALTER TABLE … ADD COLUMN … DEFAULT`): the Parquet changelog keeps only events; the sink's
        tables are filled with it (compare.py)."""
        return self.target.kind == "parquet"

    def target_table(self, table: SourceTable) -> str:
        # sink.tables.<t>.target, else sink.table.name.format: as `cdc run` names it (sink_config).
        named = self.namer.target(table.qualified)
        if named is not None and self.target.kind != "parquet":  # the changelog is by topic
            # The sink sanitizes a configured name as it does a topic's (SinkConfig.table_for).
            return table_name(named)
        return self.target.name_for(self.route(f"{self.prefix}.{table.qualified}"))

    def tables(self, only: list[str] | None = None) -> tuple[list[SourceTable], list[str]]:
        """The tables to check, and the captured ones passed over because they have no target.

        sink.tables only sets options: the sink applies every captured table, so the tables
        it does not name are checked too (they must not pass unnoticed). A captured table
        without a target is passed over only when it has no rows (the sink creates a table
        on its first change); one with rows is checked, all its rows missing.
        """
        for name in self.specs:
            if "." not in name:
                raise ConfigException(
                    f"sink.tables.{name}: name the source table as <database>.<table> (MySQL) or "
                    "<schema>.<table> (PostgreSQL)",
                    f"sink.tables.{name}",
                )
        chosen = [SourceTable(*name.split(".", 1)) for name in self.specs]
        named = {t.qualified.lower() for t in chosen}
        captured = [t for t in self.source.tables() if t.qualified.lower() not in named]
        passed: list[str] = []
        if only:
            chosen.extend(captured)  # a table asked for by name is checked even without a target
        else:
            for t in captured:
                if self.target.columns(self.target_table(t)) is not None or self._unapplied(t):
                    chosen.append(t)
                else:
                    passed.append(t.qualified)
        if only:
            by_name = {t.qualified.lower(): t for t in chosen}
            unknown = [n for n in only if n.lower() not in by_name]
            if unknown:
                raise ConfigException(
                    f"--table {unknown[0]}: not a table of the job (known: {', '.join(sorted(by_name)) or 'none'})",
                    "--table",
                )
            chosen = [by_name[n.lower()] for n in only]
        return chosen, passed

    def _unapplied(self, table: SourceTable) -> bool:
        """Rows the sink should have written somewhere; a table in the sink's own layout (a
        PostgreSQL warehouse in the source database) is the lake itself, not data to check."""
        if any(c.name == "__seq" for c in self.source.columns(table)):
            return False
        return self.source.has_rows(table)

    def keys_for(self, table: SourceTable) -> list[str]:
        spec = self.specs.get(table.qualified)
        if spec is not None and spec.keys:
            return list(spec.keys)
        # The connector's own reading of the setting: MySQL matches table names case-insensitively.
        chosen = KeyColumns.parse(
            self.config.get("message.key.columns"), case_sensitive=self.source.family == "postgres"
        ).for_table(table.qualified)
        return list(chosen) if chosen is not None else self.source.primary_key(table)

    def verify_table(
        self,
        table: SourceTable,
        max_diffs: int,
        keep_keys: bool = False,
        only: set[str] | None = None,
        at: Point | None = None,
        sample: tuple[int, int] | None = None,
    ) -> TableResult:
        """`keep_keys`: every differing key in `result.keys` (for `--repair`); `only`: compare the rows of
        these canonical keys alone (compare.compare); `at`: the lake at the source snapshot's position
        (online.py; the source connection holds that snapshot); `sample`: (N, seed), N random keys."""
        target = self.target_table(table)
        result = TableResult(table.qualified, self.target.describe(target))
        all_columns = self.source.columns(table)
        if not all_columns:
            raise ConfigException(
                f"sink.tables: {table.qualified} does not exist in the source database; fix the table name",
                f"sink.tables.{table.qualified}",
            )
        column_filter = filters(self.config)["column"]
        mapped = _mapped_columns(self.config)
        excluded = [c.name for c in all_columns if not column_filter(f"{table.qualified}.{c.name}")]
        masked = [c.name for c in all_columns if any(p.fullmatch(f"{table.qualified}.{c.name}") for p in mapped)]
        captured = [c for c in all_columns if c.name not in excluded]
        target_columns = self.target.columns(target)
        keys = self.keys_for(table)
        if not keys:
            result.skipped = "no primary key and no sink.tables.<table>.keys, so rows cannot be matched"
            return result
        missing_keys = [k for k in keys if k not in {c.name for c in captured}]
        if missing_keys:
            raise ConfigException(
                f"sink.tables.{table.qualified}.keys: column {missing_keys[0]!r} is not a captured column of the "
                "source table",
                f"sink.tables.{table.qualified}.keys",
            )
        exists = target_columns is not None
        lake = [c for c in target_columns or [] if not c.startswith("__")]
        not_compared = [c for c in captured if c.kind is None and c.name not in keys]
        columns: list[Column] = [
            c for c in captured if c.kind is not None and c.name not in masked and (c.name in lake or not exists)
        ]
        if not exists:
            result.notes.append("the target table does not exist (yet)")
        if excluded:
            result.notes.append(f"not captured (column include/exclude lists): {', '.join(excluded)}")
        if masked:
            result.notes.append(f"masked or truncated by the connector, not compared: {', '.join(masked)}")
        wraps = getattr(self.source, "wraps", None)
        wrapped = [c.name for c in columns if c.kind == "uint64" and wraps is not None and wraps(table, c.name)]
        if wrapped:
            result.notes.append(
                f"BIGINT UNSIGNED compared as the connector emits it: values above 2^63-1 wrap to negative "
                f"(bigint.unsigned.handling.mode=long; set precise to keep them): {', '.join(wrapped)}"
            )
        if not_compared:
            result.notes.append("types not compared: " + ", ".join(f"{c.name} ({c.type})" for c in not_compared))
        skip = {*masked, *(c.name for c in not_compared)}
        absent = [c.name for c in captured if exists and c.name not in lake and c.name not in skip]
        if absent:
            result.notes.append(f"not in the target: {', '.join(absent)}")
        source_names = {c.name for c in all_columns}
        extra = [c for c in lake if c not in source_names]
        if extra:
            result.notes.append(f"only in the target (dropped from the source?): {', '.join(extra)}")
        unmatched = [k for k in keys if k not in {c.name for c in columns}]
        if unmatched:
            result.skipped = f"key column {unmatched[0]!r} is not in the target, so rows cannot be matched"
            return result
        scope = self._scope(table, [next(c for c in columns if c.name == k) for k in keys], only, sample)
        result.sampled = scope.sample.size if scope is not None and scope.sample is not None else None
        chosen: Container[str] | None = scope
        self.progress(f"{table.qualified}: comparing {len(columns)} columns by key ({', '.join(keys)})")
        names = [c.name for c in columns]
        if at is not None and exists:
            return compare_at(
                result,
                columns,
                keys,
                lambda: self.source.rows(table, columns, scope),
                lambda: self.target.versions(target, names, scope),
                lambda: self.target.tombstones(target, keys, scope),
                self.target.truncated(target),
                at.seq,
                max_diffs,
                history=VALID_TO in (target_columns or []),
                keep_keys=keep_keys,
                only=chosen,
                unfilled_defaults=self._unfilled_defaults,
            )
        if at is not None:
            result.changed_since = 0
        return compare(
            result,
            columns,
            keys,
            lambda: self.source.rows(table, columns, scope),
            (lambda: self.target.rows(target, names, scope)) if exists else (lambda: iter(())),
            max_diffs,
            keep_keys,
            chosen,
            unfilled_defaults=self._unfilled_defaults,
        )

    def _scope(
        self, table: SourceTable, key_columns: list[Column], only: set[str] | None, sample: tuple[int, int] | None
    ) -> TableScope | None:
        """The keys to compare (scope.py): the table's key range, `only` these keys, a sample of (N, seed)
        drawn within them (in the source's snapshot when online); None: every key."""
        scope = TableScope(key_columns, self.ranges.get(table.qualified), keys=only)
        if sample is not None:
            scope.sample = draw_sample(self.source, table, scope, *sample, self.progress)
        return scope if scope.restricts else None

    def range_scope(self, table: SourceTable, key_columns: list[Column]) -> TableScope | None:
        """The table's key range alone, for reading its source rows (`--repair`'s key values)."""
        found = self.ranges.get(table.qualified)
        return TableScope(key_columns, found) if found is not None else None

    def apply_key_range(self, tables: list[SourceTable], named: bool) -> list[SourceTable]:
        """The tables the key range applies to (`ranges`); the others are kept in `range_skipped` when the
        tables were not `named` with --table, else the range's one-line error says why and what to do."""
        if self.key_range is None:
            return tables
        kept: list[SourceTable] = []
        for t in tables:
            try:
                self.ranges[t.qualified] = bind(self.key_range, t.qualified, self.keys_for(t), self.source.columns(t))
                kept.append(t)
            except RangeUnusable as e:
                if named:
                    raise ConfigException(f"{OPTION} {self.key_range.text}: {e}", OPTION) from None
                self.range_skipped[t.qualified] = str(e)
        if not kept:
            first = next(iter(self.range_skipped.values()), "the job has no table to verify")
            raise ConfigException(
                f"{OPTION} {self.key_range.text}: no table takes the range ({first}); name the first key column "
                "of the tables to check, with --table for one table",
                OPTION,
            )
        return kept


def verify_job(
    job: JobSpec,
    only: list[str] | None = None,
    max_diffs: int = 20,
    progress: Callable[[str], None] = lambda m: None,
    sample: tuple[int, int] | None = None,
) -> tuple[list[TableResult], list[str]]:
    """Each table's result, and the captured tables passed over for lack of a target."""
    with Verifier(job, progress) as v:
        return verify_tables(v, only, max_diffs, sample=sample)


def verify_tables(
    v: Verifier,
    only: list[str] | None = None,
    max_diffs: int = 20,
    keep_keys: bool = False,
    sample: tuple[int, int] | None = None,
) -> tuple[list[TableResult], list[str]]:
    """`verify_job` on an open Verifier (`--repair` goes on using its connections)."""
    tables, passed = _checked_tables(v, only)
    return [v.verify_table(t, max_diffs, keep_keys, sample=sample) for t in tables], passed


def _checked_tables(v: Verifier, only: list[str] | None) -> tuple[list[SourceTable], list[str]]:
    job = v.job
    tables, passed = v.tables(only)
    tables = v.apply_key_range(tables, named=bool(only))
    if not any(v.target.columns(v.target_table(t)) is not None for t in tables) and not _sink_committed(job):
        raise JobNotRunYet(
            f"job {job.name!r} has not run yet: its sink has committed no batch and none of its "
            f"{len(tables) + len(passed)} tables exists in the {v.target.kind} target; "
            "run `cdc run <job.yaml> --until-caught-up` first, then verify"
        )
    return tables, passed


@dataclass
class OnlineRun:
    """Where the online verify read the source, and how long the lake took to apply up to there."""

    position: str
    seq: bytes
    waited_s: float

    def to_json(self) -> dict[str, object]:
        return {"position": self.position, "sequence": self.seq.hex(), "waited_s": round(self.waited_s, 3)}


def verify_online(
    v: Verifier,
    only: list[str] | None = None,
    max_diffs: int = 20,
    timeout_s: float = 600,
    sample: tuple[int, int] | None = None,
    keep_keys: bool = False,
    only_keys: dict[str, set[str]] | None = None,
) -> tuple[list[TableResult], list[str], OnlineRun]:
    """Verify while the job runs (online.py): the source in one snapshot at X, the lake once it applied X.
    `only_keys`: compare only these canonical keys of each table named (`--repair`'s check afterwards)."""
    from cdc.jobs.source_probe import stored_offset
    from cdc.jobs.verify.catchup import wait_applied
    from cdc.jobs.verify.snapshot import close_point, open_point

    tables, passed = _checked_tables(v, only)
    if only_keys is not None:
        tables = [t for t in tables if t.qualified in only_keys]
    point = open_point(v.source, v.config, tables, stored_offset(v.job))
    try:
        v.progress(f"source snapshot at {point.text}; waiting until the lake has applied every change up to it")
        topics = [v.route(f"{v.prefix}.{t.qualified}") for t in tables]
        waited = wait_applied(v.job, point.reached, point.text, topics, timeout_s, v.progress)
        v.progress(f"the lake has applied {point.text} (after {waited:.1f} s); comparing")
        results = [
            v.verify_table(
                t, max_diffs, keep_keys, only=None if only_keys is None else only_keys[t.qualified], at=point,
                sample=sample,
            )
            for t in tables
        ]  # fmt: skip
    finally:
        close_point(v.source)
    return results, passed, OnlineRun(point.text, point.seq, waited)


class JobNotRunYet(ConfigException):
    """`cdc verify` before the job's first batch: every row would show as missing, which says
    nothing about the pipeline, so the report is this one line instead."""


def _sink_committed(job: JobSpec) -> bool:
    """Whether the job's Spark query committed a batch (its checkpoint, as `cdc status` reads it)."""
    from cdc.jobs.checkpoints import checkpoint_dir, committed_offsets

    checkpoint = checkpoint_dir(job)
    if "://" in str((job.spark or {}).get("checkpoint", "")):
        return True  # a remote checkpoint (hdfs://, s3a://) cannot be read here: assume it ran
    return committed_offsets(checkpoint)[0] is not None
