"""Per-table options of Databricks AUTO CDC (`create_auto_cdc_flow`, `APPLY CHANGES`), under their
names there, and the rules they bring:

- `column_list` / `except_column_list` (one or the other): the source columns written to the
  target. Key columns always stay: a list that drops one is refused (the sink applies by key).
- `ignore_null_updates`: in an update (`op=u`), a NULL column value means "unchanged", so the
  target keeps the value it holds. Inserts, snapshot reads and deletes are whole rows: their
  NULLs are NULLs, and they reset what an earlier update left. The cells are masks of the
  same kind as the cells Debezium's unavailable-value placeholder stands in (apply/unchanged.py
  settles both by sequence between the batch's earlier events and the stored state), only
  quiet: a NULL with nothing to keep stays NULL, with no warning.
- `track_history_column_list` / `track_history_except_column_list` (one or the other; mode
  scd2): only a change to a tracked column opens a new version; an event that changes only
  untracked columns updates the key's current version in place (apply/scd2.py).
- `schema.change.behavior` (Flink CDC's option, per table here): what a schema change at the
  source does to the target: `exception`, `evolve`, `try_evolve`, `lenient` (the default) or
  `ignore` (apply/evolution.py says each). Allowed on the parquet changelog too, which has no
  table schema to change: there it is only checked.

`TableOptions.parse` is the one parser of these keys, for the sink's `table.options` and for
the job file's `sink.tables.<t>` entries; every error is a `TableOptionError` naming its key.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from cdc_spark.apply.errors import SinkConfigError
from cdc_spark.apply.evolution import BEHAVIORS, DEFAULT_BEHAVIOR
from cdc_spark.decode.flatbatch import META_COLUMNS, FlatBatch

COLUMN_LIST, EXCEPT_COLUMN_LIST = "column_list", "except_column_list"
IGNORE_NULL_UPDATES = "ignore_null_updates"
TRACK_LIST, TRACK_EXCEPT_LIST = "track_history_column_list", "track_history_except_column_list"
SCHEMA_CHANGE_BEHAVIOR = "schema.change.behavior"
OPTION_KEYS = (
    COLUMN_LIST,
    EXCEPT_COLUMN_LIST,
    IGNORE_NULL_UPDATES,
    TRACK_LIST,
    TRACK_EXCEPT_LIST,
    SCHEMA_CHANGE_BEHAVIOR,
)
LIST_KEYS = (COLUMN_LIST, EXCEPT_COLUMN_LIST, TRACK_LIST, TRACK_EXCEPT_LIST)
_LISTED = 12  # columns named in a message


class TableOptionError(SinkConfigError):
    """One table option the sink cannot honour: `key` names it, `detail` says why and the fix."""

    def __init__(self, key: str, detail: str) -> None:
        super().__init__(f"{key}: {detail}")
        self.key = key
        self.detail = detail


@dataclass(frozen=True)
class TableOptions:
    """One table's AUTO CDC options (None for a list: not given)."""

    column_list: tuple[str, ...] | None = None
    except_column_list: tuple[str, ...] | None = None
    ignore_null_updates: bool = False
    track_history_column_list: tuple[str, ...] | None = None
    track_history_except_column_list: tuple[str, ...] | None = None
    schema_change_behavior: str = DEFAULT_BEHAVIOR

    @classmethod
    def parse(
        cls,
        raw: Mapping[str, Any] | None,
        mode: str = "scd1",
        target: str = "delta",
        ignore_null_updates: bool = False,
        schema_change_behavior: str = DEFAULT_BEHAVIOR,
    ) -> TableOptions:
        """The options of one table whose mode is `mode`; `ignore_null_updates` and
        `schema_change_behavior`: the job's defaults."""
        given = dict(raw or {})
        for key in given:
            if key not in OPTION_KEYS:
                raise TableOptionError(str(key), f"not a table option; the options are {', '.join(OPTION_KEYS)}")
        behavior = parse_behavior(given.pop(SCHEMA_CHANGE_BEHAVIOR, None), schema_change_behavior)
        if given and target == "parquet":
            key = next(iter(given))
            raise TableOptionError(
                key,
                "the parquet changelog appends every event as it came (its raw value); column lists, "
                "ignore_null_updates and history lists apply to the delta, iceberg and postgres targets: drop it",
            )
        lists = {key: _names(key, given[key]) for key in LIST_KEYS if given.get(key) is not None}
        _exclusive(lists, COLUMN_LIST, EXCEPT_COLUMN_LIST)
        _exclusive(lists, TRACK_LIST, TRACK_EXCEPT_LIST)
        for key in (TRACK_LIST, TRACK_EXCEPT_LIST):
            if key in lists and mode != "scd2":
                raise TableOptionError(
                    key,
                    f"history lists apply to mode scd2 tables and this table's mode is {mode}: drop {key}, or set "
                    "mode: scd2 (type delta)",
                )
        options = cls(
            column_list=lists.get(COLUMN_LIST),
            except_column_list=lists.get(EXCEPT_COLUMN_LIST),
            ignore_null_updates=_flag(given.get(IGNORE_NULL_UPDATES), ignore_null_updates),
            track_history_column_list=lists.get(TRACK_LIST),
            track_history_except_column_list=lists.get(TRACK_EXCEPT_LIST),
            schema_change_behavior=behavior,
        )
        options._check_tracked_are_written()
        return options

    @property
    def selects(self) -> bool:
        """Whether a column list leaves columns out."""
        return self.column_list is not None or self.except_column_list is not None

    @property
    def tracks_history(self) -> bool:
        """Whether a history list is given (else every event is a version, as before these lists)."""
        return self.track_history_column_list is not None or self.track_history_except_column_list is not None

    def _check_tracked_are_written(self) -> None:
        """A tracked column must be one the table has (an untracked one left out is nothing to track)."""
        left_out = [c for c in self.track_history_column_list or () if not self.writes(c)]
        if left_out:
            which = COLUMN_LIST if self.column_list is not None else EXCEPT_COLUMN_LIST
            raise TableOptionError(
                TRACK_LIST,
                f"names {', '.join(left_out)}, which {which} leaves out of the target: history can only track "
                f"columns the table has; fix {which} or {TRACK_LIST}",
            )

    def writes(self, column: str) -> bool:
        """Whether the column lists let `column` into the target (keys and meta columns always)."""
        if self.column_list is not None:
            return column in self.column_list
        return self.except_column_list is None or column not in self.except_column_list

    def dropped_keys(self, keys: Iterable[str]) -> list[str]:
        """The key columns the column lists would leave out (none may be)."""
        return [k for k in keys if not self.writes(k)]

    def key_problem(self, keys: Iterable[str], table: str) -> TableOptionError | None:
        """The error for a column list that drops a key column (None: it keeps them all)."""
        dropped = self.dropped_keys(keys)
        if not dropped:
            return None
        names = ", ".join(dropped)
        if self.column_list is not None:
            return TableOptionError(
                COLUMN_LIST,
                f"table {table}: leaves out key column(s) {names}; the sink applies every change by its key, so "
                f"the key stays: add {names} to column_list",
            )
        return TableOptionError(
            EXCEPT_COLUMN_LIST,
            f"table {table}: names key column(s) {names}; the sink applies every change by its key, so the key "
            f"stays: remove {names} from except_column_list",
        )

    def unknown_columns(self, columns: Sequence[str]) -> list[tuple[str, str]]:
        """(option, name) for every listed name that is not one of `columns`."""
        known = set(columns)
        out = []
        for key in LIST_KEYS:
            for name in getattr(self, key) or ():
                if name not in known:
                    out.append((key, name))
        return out

    def select(self, flat: FlatBatch, table: str) -> FlatBatch:
        """`flat` with only the columns the lists write (keys and meta columns always). A list
        dropping a key, or naming a column the batch's events do not have, is refused."""
        if not self.selects and not self.tracks_history:
            return flat
        problem = self.key_problem(flat.key_columns, table)
        if problem is not None:
            raise problem
        unknown = self.unknown_columns(flat.table.column_names)
        if unknown:
            key, name = unknown[0]
            have = [c for c in flat.table.column_names if c not in META_COLUMNS]
            raise TableOptionError(
                key,
                f"table {table}: no column {name!r} in its change events (they have {_listed(have)}); fix the name, "
                f"or remove it from {key}",
            )
        if not self.selects:
            return flat
        keep = [c for c in flat.table.column_names if c in META_COLUMNS or c in flat.key_columns or self.writes(c)]
        if len(keep) == flat.table.num_columns:
            return flat
        masks = {c: m for c, m in flat.unchanged.items() if c in keep}
        return FlatBatch(flat.table.select(keep), flat.key_columns, masks)

    def tracked(self, columns: Sequence[str], keys: Sequence[str]) -> list[str]:
        """The columns whose change opens a new version: the history list's, or every written
        column but the except list's (keys and meta columns are never tracked)."""
        candidates = [c for c in columns if c not in keys and not c.startswith("__")]
        if self.track_history_column_list is not None:
            return [c for c in candidates if c in self.track_history_column_list]
        excluded = self.track_history_except_column_list or ()
        return [c for c in candidates if c not in excluded]


def null_masks(table: pa.Table, keys: Sequence[str]) -> dict[str, pa.Array]:
    """Column → the cells `ignore_null_updates` keeps: NULL values of updates (`__op = 'u'`),
    never in key or meta columns, never in inserts, reads or deletes."""
    if table.num_rows == 0 or "__op" not in table.column_names:
        return {}
    updates = pc.fill_null(pc.equal(table.column("__op").combine_chunks(), "u"), False)
    if not pc.any(updates).as_py():
        return {}
    out: dict[str, pa.Array] = {}
    for name in table.column_names:
        if name in META_COLUMNS or name in keys or name.startswith("__"):
            continue
        mask = pc.and_(updates, pc.is_null(table.column(name).combine_chunks()))
        if pc.any(mask).as_py():
            out[name] = mask
    return out


def _names(key: str, value: Any) -> tuple[str, ...]:
    """A list of column names (or one comma-separated string), each once, none empty."""
    if isinstance(value, str):
        items: list[Any] = value.split(",")
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        raise TableOptionError(key, f"must be a list of column names, e.g. [id, name]; got {value!r}")
    names = [str(v).strip() for v in items]
    if not names or any(not n for n in names):
        raise TableOptionError(key, f"must name columns, e.g. [id, name]; got {value!r} (an empty name or list)")
    return tuple(dict.fromkeys(names))


def parse_behavior(value: Any, default: str = DEFAULT_BEHAVIOR) -> str:
    """A `schema.change.behavior` value (None: `default`), or TableOptionError naming the five."""
    if value is None:
        return default
    text = str(value).strip().lower()
    if text not in BEHAVIORS:
        raise TableOptionError(
            SCHEMA_CHANGE_BEHAVIOR,
            f"{value!r} is not a behavior; use one of {', '.join(BEHAVIORS)} (lenient, the default: add columns, "
            "keep dropped ones, widen types; never lose data)",
        )
    return text


def _exclusive(lists: Mapping[str, tuple[str, ...]], one: str, other: str) -> None:
    if one in lists and other in lists:
        raise TableOptionError(
            other, f"{one} and {other} exclude each other (as in AUTO CDC): keep the one that is shorter to write"
        )


def _flag(value: Any, default: bool) -> bool:
    if value is None:
        return default
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise TableOptionError(IGNORE_NULL_UPDATES, f"{value!r}: use true or false")
    return text == "true"


def _listed(columns: Sequence[str]) -> str:
    more = f" and {len(columns) - _LISTED} more" if len(columns) > _LISTED else ""
    return ", ".join(columns[:_LISTED]) + more
