"""A table's AUTO CDC options name its columns (an online check, with the source's catalog).

`column_list`, `except_column_list` and the history lists of `sink.tables.<t>` name source
columns; a misspelled name would leave a column out (or, in an except list, let one in) until
the sink refused the batch mid-run. The sink's own parser (cdc_spark/apply/table_options.py)
checks the options' shapes offline (`check_sink`); here each name is looked up in the table,
and the lists must keep the table's key columns (`keys`, else the primary key).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cdc.jobs.validation.problems import Collector, did_you_mean

_LISTED = 8  # columns named in a message


def check_option_columns(
    job: Mapping[str, Any], name: Any, columns: Sequence[str], keys: Sequence[str], out: Collector
) -> None:
    """Each column a list option of table `name` names is one of `columns`, and no list drops one
    of `keys` (the key columns as the table spells them; empty: not known)."""
    try:
        from cdc_spark.apply.table_options import LIST_KEYS, TableOptionError, TableOptions
    except ImportError:  # no Spark plugin here: `cdc run` reports that itself
        return
    sink = job.get("sink") or {}
    opts = (sink.get("tables") or {}).get(name) or {}
    known = set(columns)
    for key in LIST_KEYS:
        listed = opts.get(key)
        for i, column in enumerate(listed if isinstance(listed, list) else []):
            if str(column) not in known:
                out.add(
                    ("sink", "tables", name, key, i),
                    f"table {name} has no column {str(column)!r}{did_you_mean(str(column), list(columns))}; name "
                    f"columns of the table ({_listed(columns)})",
                )
    if not keys:
        return
    given = {k: v for k, v in opts.items() if k in LIST_KEYS}
    try:
        options = TableOptions.parse(given, str(opts.get("mode", sink.get("mode", "scd1"))), str(sink.get("type")))
    except TableOptionError:
        return  # check_sink reported it
    problem = options.key_problem(keys, str(name))
    if problem is not None:
        out.add(("sink", "tables", name, problem.key), problem.detail)


def _listed(columns: Sequence[str]) -> str:
    more = f" and {len(columns) - _LISTED} more" if len(columns) > _LISTED else ""
    return ", ".join(columns[:_LISTED]) + more
