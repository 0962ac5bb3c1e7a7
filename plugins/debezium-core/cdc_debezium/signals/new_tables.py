"""`snapshot.new.tables=parallel`: a restart that captures more tables snapshots just those, incrementally.

Debezium's MySQL connector (1.x) had this setting: with `parallel`, its offsets carried the table and
database filters, and a restart whose filters captured tables the stored ones did not read those tables
beside the binlog stream. Debezium 2.x removed it in favour of ad-hoc incremental snapshots sent as
signals; Flink CDC's `scan.newly-added-table.enabled` does the same job. Here it is the signal path run
by the connector itself: the newly captured tables are queued as an incremental snapshot (DBLog chunks,
`cdc_debezium.signals.incremental`) when streaming starts, exactly as `execute-snapshot` would queue them,
so only those tables are read, streaming never pauses, and a kill resumes at the next chunk.

What makes it durable is the offset, the one record stored only after what precedes it is: with the
setting on, every record's offset carries the filters it was captured under (`table_include_list`,
`table_exclude_list`, and `database_*` for MySQL or `schema_*` for PostgreSQL; JSON lists of the
patterns, only those set). A restart compares the stored filters with its own:

- a table the current filters capture and the stored ones did not is new, and is queued;
- until an offset written by this run is stored, a restart finds the old filters again and queues the
  table again (nothing was read for it durably yet); once one is, the running snapshot is in the same
  offset (`incremental_snapshot_*`) and resumes at its next chunk;
- an offset without any filter key says its run captured every table (no filters), or was written
  without the setting: nothing is new. So tables added before the first run with the setting are not
  found; send `execute-snapshot` for them.

An initial snapshot (a first start, `snapshot.mode=always`, a resumed one) reads every captured table
itself and queues nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cdc.api import ConfigException, SourceRecord
from cdc_debezium.config import TABLE_EXCLUDE_LIST, TABLE_INCLUDE_LIST
from cdc_debezium.filters import include_exclude
from cdc_debezium.signals.config import NEW_TABLES as SNAPSHOT_NEW_TABLES
from cdc_debezium.signals.config import parse_new_tables_mode as parse_mode

log = logging.getLogger(__name__)

#: The signal id the queued snapshot carries (its notifications and log lines name it).
SIGNAL_ID = "snapshot.new.tables"


def _offset_key(config_key: str) -> str:
    return config_key.replace(".", "_")


@dataclass(frozen=True)
class CapturedFilters:
    """The include/exclude lists a task captures under, and what its offsets say about them.

    `container_keys` are the include and exclude keys matched against the database (MySQL) or schema
    (PostgreSQL) name; `table.include.list`/`table.exclude.list` are matched against `<container>.<table>`,
    as the connectors' own filters do (cdc_debezium.filters, the owner of the matching rule).
    """

    container_keys: tuple[str, str]
    patterns: Mapping[str, tuple[str, ...]]  # config key -> its patterns, only the keys that are set

    @classmethod
    def from_values(cls, values: Mapping[str, Any], container_keys: tuple[str, str]) -> CapturedFilters:
        """From a connector config's parsed values (lists of patterns)."""
        patterns: dict[str, tuple[str, ...]] = {}
        for key in (*container_keys, TABLE_INCLUDE_LIST, TABLE_EXCLUDE_LIST):
            value = values.get(key)
            items = [value] if isinstance(value, str) else list(value or ())
            listed = tuple(str(p) for p in items if p is not None and str(p) != "")
            if listed:
                patterns[key] = listed
        return cls(container_keys, patterns)

    @classmethod
    def from_offset(cls, offset: Mapping[str, Any], container_keys: tuple[str, str]) -> CapturedFilters:
        """The filters a stored offset was captured under (none set when it has no filter keys)."""
        patterns: dict[str, tuple[str, ...]] = {}
        for key in (*container_keys, TABLE_INCLUDE_LIST, TABLE_EXCLUDE_LIST):
            value = offset.get(_offset_key(key))
            if isinstance(value, list) and value:
                patterns[key] = tuple(str(p) for p in value)
        return cls(container_keys, patterns)

    def offset_keys(self) -> dict[str, list[str]]:
        """What every offset of a task with the setting carries."""
        return {_offset_key(k): list(v) for k, v in self.patterns.items()}

    def captures(self, tables: Iterable[tuple[str, str]]) -> set[tuple[str, str]]:
        """Those of `tables` (container, table) these filters capture."""
        lists = {k: list(v) for k, v in self.patterns.items()}
        container = include_exclude(lists, *self.container_keys)
        table = include_exclude(lists, TABLE_INCLUDE_LIST, TABLE_EXCLUDE_LIST)
        return {(c, t) for c, t in tables if container(c) and table(f"{c}.{t}")}


class NewTables:
    """One task's `snapshot.new.tables`: the filters it stamps on its offsets, the tables it finds new."""

    def __init__(self, enabled: bool, current: CapturedFilters) -> None:
        self.enabled = enabled
        self.current = current
        self._stamp = current.offset_keys() if enabled else {}
        # The filter keys this run does not set: an older offset's value for them is dropped.
        every = (*current.container_keys, TABLE_INCLUDE_LIST, TABLE_EXCLUDE_LIST)
        self._unset = tuple(k for k in map(_offset_key, every) if k not in self._stamp)

    @classmethod
    def of(cls, props: Mapping[str, Any], values: Mapping[str, Any], container_keys: tuple[str, str]) -> NewTables:
        return cls(parse_mode(props), CapturedFilters.from_values(values, container_keys))

    def require(self, can_snapshot: bool, read_only_hint: str) -> None:
        """Refuses to start when no incremental snapshot could run (no watermark table, not read-only)."""
        if self.enabled and not can_snapshot:
            raise ConfigException(
                f"{SNAPSHOT_NEW_TABLES}=parallel reads newly captured tables with an incremental snapshot, whose "
                "watermarks are written to the signal table: set signal.data.collection to that table "
                f"(columns id, type, data){read_only_hint}, or set {SNAPSHOT_NEW_TABLES}=off",
                SNAPSHOT_NEW_TABLES,
                "parallel",
            )

    def stamp(self, records: Sequence[SourceRecord]) -> None:
        """Writes the current filters into each record's offset (and drops a filter key no longer set)."""
        if not self.enabled:
            return
        stamp, unset = self._stamp, self._unset
        for record in records:
            offset = record.source_offset
            if isinstance(offset, dict):
                for key in unset:
                    offset.pop(key, None)
                offset.update(stamp)

    def newly_captured(self, stored: Mapping[str, Any] | None, captured: Iterable[tuple[str, str]]) -> list[str]:
        """`container.table` of the captured tables the stored offset's filters did not capture, in order."""
        if not self.enabled or not stored:
            return []
        tables = list(captured)
        before = CapturedFilters.from_offset(stored, self.current.container_keys)
        try:
            old = before.captures(tables)
        except ConfigException as e:  # an edited offset with a bad pattern: say so, queue nothing
            log.warning("%s: the stored offset's filters cannot be read (%s); no table is snapshotted", SIGNAL_ID, e)
            return []
        added = [f"{c}.{t}" for c, t in tables if (c, t) not in old]
        if added:
            log.info(
                "%s=parallel: %s %s captured since the last run (the include/exclude lists changed); an incremental "
                "snapshot reads %s while streaming goes on",
                SNAPSHOT_NEW_TABLES, ", ".join(added), "is" if len(added) == 1 else "are",
                "it" if len(added) == 1 else "them",
            )  # fmt: skip
        return added
