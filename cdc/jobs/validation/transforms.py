"""Key and value SMTs (Kafka Connect's and Debezium's) against what the Spark sink needs.

The sink applies Debezium change events: it groups and merges rows by the record key, reads
the row from the envelope's before/after, orders by source and dispatches on op. An SMT that
reshapes the envelope or changes the key makes it merge rows wrongly or fail mid-run.
"""

from __future__ import annotations

from typing import Any

from cdc.jobs.validation.problems import Collector

_ENVELOPE = ("before", "after", "source", "op")
# SMTs that replace the envelope with something else (Debezium's and Kafka's own).
_RESHAPING = (
    "ExtractNewRecordState",
    "ExtractNewDocumentState",
    "UnwrapFromEnvelope",
    "Flatten",
    "HoistField",
    "EventRouter",
)
# Debezium's scripted Filter: its simple name is Kafka's Filter, but it has a condition, not a predicate.
_EXPRESSION_FILTERS = ("io.debezium.transforms.Filter", "ExpressionFilter")
_RESHAPING_VALUE = ("ExtractField", "ValueToKey", "Cast", "SetSchemaMetadata")


def _list(value: Any) -> list[str]:
    if value is None:
        return []
    items = value if isinstance(value, list) else str(value).split(",")
    return [str(v).strip() for v in items if str(v).strip()]


def check_transform_shapes(job: dict[str, Any], out: Collector) -> None:
    """Key and value SMTs that would make the sink merge rows wrongly or fail mid-run."""
    for i, t in enumerate(job.get("transforms") or []):
        simple = str(t.get("type", "")).rsplit(".", 1)[-1]
        base, _, side = simple.partition("$")
        label = f"transform {t.get('name')!r} ({simple})"
        path: tuple[str | int, ...] = ("transforms", i)
        if str(t.get("type", "")).strip() in _EXPRESSION_FILTERS or simple == "ExpressionFilter":
            out.warn(
                path,
                f"{label} drops the events its condition is false for, deletes and truncates included: a dropped "
                "change leaves the target different from the source (`cdc verify` reports it); to leave out whole "
                "tables use the source's table.exclude.list",
            )
        elif base in _RESHAPING or (base in _RESHAPING_VALUE and side != "Key"):
            out.add(
                (*path, "type"),
                f"{label} reshapes the Debezium change event, but the Spark sink needs the envelope as the "
                "source writes it (before, after, source, op) to apply deletes, truncates and ordering; remove "
                "it (the sink already writes rows, not envelopes)",
            )
            if base == "ExtractNewRecordState":
                _check_unwrap_deletes(t, path, label, out)
        elif base in ("ReplaceField", "MaskField") and side == "Key":
            out.add(
                path,
                f"{label} changes the record key, and the Spark sink merges rows by that key: a dropped or masked "
                "key column makes different rows one (silently losing rows), a renamed one leaves the target keyed "
                "by a column the source table does not have; remove it, and choose key columns with "
                "sink.tables.<db>.<table>.keys (or mask columns with source column.mask.* settings)",
            )
        elif base == "InsertField" and side == "Key":
            per_event = [k for k in ("offset.field", "timestamp.field") if t.get(k)]
            if per_event:
                out.add(
                    (*path, per_event[0]),
                    f"{label} adds {per_event[0]} to the record key: it differs for every event, so the Spark "
                    "sink never merges a row's changes (every update and delete becomes a row of its own); "
                    "remove it, or add the field to the value instead",
                )
            else:
                out.warn(
                    path,
                    f"{label} adds a field to the record key: the Spark sink keys the target by it too "
                    "(an extra key column the source table does not have)",
                )
        elif base == "ReplaceField" and side == "Value":
            _check_replace_value(t, path, label, out)
        elif base == "MaskField" and side == "Value":
            fields = _list(t.get("fields"))
            hit = [f for f in fields if f in _ENVELOPE]
            what = (
                f"masks {', '.join(hit)} of the Debezium envelope, which the Spark sink needs"
                if hit
                else f"masks top-level fields of the Debezium envelope, where {', '.join(fields) or 'they'} are not "
                "(the row's columns are inside before/after), so the source fails on every event"
            )
            out.add(
                (*path, "fields"),
                f"{label} {what}; remove it, and mask columns with the source's column.mask.with.<n>.chars or "
                "column.mask.hash.<algorithm>.with.salt.<salt> settings",
            )
        elif base == "InsertField" and side == "Value":
            out.warn(
                path,
                f"{label} adds a field to the Debezium envelope, not to the row (inside before/after), so the "
                "Spark sink never writes it; remove it",
            )
        elif base == "Filter":
            _check_filter(t, path, label, out)


def _check_unwrap_deletes(t: dict[str, Any], path: tuple[str | int, ...], label: str, out: Collector) -> None:
    """ExtractNewRecordState's delete handling: `drop` (or the legacy keys' default) loses deletes."""
    mode, legacy, legacy_tombstones = (
        t.get("delete.tombstone.handling.mode"),
        t.get("delete.handling.mode"),
        t.get("drop.tombstones"),
    )
    if mode is not None and str(mode).strip():
        key, setting = "delete.tombstone.handling.mode", str(mode).strip().lower()
    elif legacy is not None or legacy_tombstones is not None:
        # the legacy keys' delete.handling.mode defaults to drop
        key = "delete.handling.mode" if legacy is not None else "drop.tombstones"
        setting = str(legacy or "drop").strip().lower()
    else:
        return  # the default (tombstone) keeps deletes, as null values
    if setting == "drop":
        out.add(
            (*path, key),
            f"{label} drops delete events (delete handling: drop), so the target keeps every deleted row; set "
            "delete.tombstone.handling.mode=rewrite (a delete becomes its before row with __deleted=true) or "
            "tombstone",
        )


def _check_replace_value(t: dict[str, Any], path: tuple[str | int, ...], label: str, out: Collector) -> None:
    exclude = _list(t.get("exclude")) + _list(t.get("blacklist"))
    include = _list(t.get("include")) + _list(t.get("whitelist"))
    renames = [r.split(":", 1)[0] for r in _list(t.get("renames"))]
    advice = (
        "the row's columns are inside before/after, so drop columns with the source's column.exclude.list "
        "(or column.include.list)"
    )
    broken = [f for f in exclude + renames if f in _ENVELOPE]
    if include:
        broken += [f for f in _ENVELOPE if f not in include]
    if broken:
        key = next((k for k in ("exclude", "blacklist", "renames", "include", "whitelist") if k in t), "type")
        out.add(
            (*path, key),
            f"{label} removes or renames {', '.join(sorted(set(broken)))} of the Debezium envelope, which the "
            f"Spark sink needs (it would fail on every event); remove the transform: {advice}",
        )
    elif exclude or renames:
        out.warn(
            path,
            f"{label} works on the top level of the Debezium envelope (before, after, source, op, …), where "
            f"{', '.join(exclude + renames)} are not, so it changes nothing; {advice}",
        )


def _check_filter(t: dict[str, Any], path: tuple[str | int, ...], label: str, out: Collector) -> None:
    predicate = t.get("predicate")
    if not predicate:
        out.add(path, f"{label} has no predicate, so it drops every event and the sink gets nothing; add one")
        return
    ptype = str(predicate.get("type", "")).rsplit(".", 1)[-1]
    if ptype == "RecordIsTombstone":
        if predicate.get("negate"):
            out.add(
                (*path, "predicate", "negate"),
                f"{label} with a negated RecordIsTombstone keeps only tombstones and drops every change event; "
                "remove negate (dropping tombstones is harmless: the sink ignores them)",
            )
    elif ptype == "HasHeaderKey":
        out.warn(
            path,
            f"{label} drops events by header, deletes and truncates included: a dropped change leaves the "
            "target different from the source (`cdc verify` reports it); to leave out whole tables use the "
            "source's table.exclude.list",
        )
