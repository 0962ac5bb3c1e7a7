"""Key and value SMTs (Kafka Connect's and Debezium's) against what the Spark sink needs.

The sink applies Debezium change events: it groups and merges rows by the record key, reads
the row from the envelope's before/after (or a row flattened by ExtractNewRecordState with the
operation and source position added, unwrap.py), orders by source position and dispatches on op.
An SMT that reshapes the event, splits a table over topics or changes the key's columns makes it
merge rows wrongly or fail mid-run; every SMT is accepted (with the reason), warned about or
refused here, by the side it works on (key, envelope, flattened row).
"""

from __future__ import annotations

from typing import Any

from cdc.jobs.validation.problems import Collector
from cdc.jobs.validation.unwrap import Unwrapped, check_unwrap

_ENVELOPE = ("before", "after", "source", "op")
# SMTs that replace the envelope with something the sink cannot apply (Debezium's and Kafka's own);
# ExtractNewRecordState is checked on its own (unwrap.py): the sink applies its rows when they carry
# the operation and the source position.
_RESHAPING = ("ExtractNewDocumentState", "UnwrapFromEnvelope", "HoistField", "EventRouter", "ExtractField")
# Debezium's scripted Filter: its simple name is Kafka's Filter, but it has a condition, not a predicate.
_EXPRESSION_FILTERS = ("io.debezium.transforms.Filter", "ExpressionFilter")
# Accepted as they are, and why:
_HARMLESS = frozenset(
    {
        # headers only: the sink reads none of them
        "InsertHeader",
        "DropHeaders",
        "ExtractChangedRecordState",
        # the key and value schemas' name and version: the sink reads fields, not schema names
        "SetSchemaMetadata",
        # the Kafka partition: the sink orders a key's events by the source sequence across partitions
        "PartitionRouting",
        # timestamp values shown in another zone, the same for every event; ordering uses source positions
        "TimezoneConverter",
    }
)
_UNIQUE_KEY_FIELD = "__dbz__physicalTableIdentifier"


def _list(value: Any) -> list[str]:
    if value is None:
        return []
    items = value if isinstance(value, list) else str(value).split(",")
    return [str(v).strip() for v in items if str(v).strip()]


def check_transform_shapes(job: dict[str, Any], out: Collector) -> None:
    """Key and value SMTs that would make the sink merge rows wrongly or fail mid-run.

    The chain is read in order: SMTs after an ExtractNewRecordState see its flattened row, where
    the row's columns are the top-level fields and only the added op and position are the sink's.
    """
    flat: Unwrapped | None = None
    transforms = job.get("transforms") or []
    for i, t in enumerate(transforms):
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
        elif base == "ExtractNewRecordState":
            if flat is not None:
                out.warn(path, f"{label} follows another ExtractNewRecordState, whose rows it passes unchanged")
                continue
            flat = check_unwrap(job, t, path, label, out)
        elif base in _HARMLESS:
            renames = base == "SetSchemaMetadata" and side != "Key" and bool(t.get("schema.name"))
            if renames and flat is None and _unwrap_after(transforms, i):
                out.add(
                    (*path, "schema.name"),
                    f"{label} renames the envelope's schema before an ExtractNewRecordState, which then passes "
                    "every event through as an envelope (it unwraps only schemas named <...>.Envelope); move it "
                    "after the ExtractNewRecordState",
                )
        elif side == "Key":
            _check_key(t, base, path, label, out)
        elif flat is not None:
            _check_flat(t, base, path, label, flat, out)
        else:
            _check_envelope(t, base, path, label, out)


def _unwrap_after(transforms: list[dict[str, Any]], i: int) -> bool:
    return any(str(t.get("type", "")).rsplit(".", 1)[-1] == "ExtractNewRecordState" for t in transforms[i + 1 :])


def _check_key(t: dict[str, Any], base: str, path: tuple[str | int, ...], label: str, out: Collector) -> None:
    """`$Key` SMTs: the sink merges rows by the record key and names the key columns after its fields."""
    if base in ("ReplaceField", "MaskField") or (base == "HeaderFrom" and _moves(t)):
        out.add(
            path,
            f"{label} changes the record key, and the Spark sink merges rows by that key: a dropped or masked "
            "key column makes different rows one (silently losing rows), a renamed one leaves the target keyed "
            "by a column the source table does not have; remove it, and choose key columns with "
            "sink.tables.<db>.<table>.keys (or mask columns with source column.mask.* settings)",
        )
    elif base in ("ExtractField", "HoistField"):
        what = (
            "replaces the record key struct by one field's value"
            if base == "ExtractField"
            else ("wraps the record key in a struct field")
        )
        out.add(
            (*path, "field"),
            f"{label} {what}, but the Spark sink names the target's key columns after the key struct's fields "
            "(and merges rows by them); remove it, and choose key columns with sink.tables.<db>.<table>.keys",
        )
    elif base in ("Cast", "TimestampConverter"):
        key = "spec" if base == "Cast" else "target.type"
        out.warn(
            (*path, key),
            f"{label} converts record key fields: keys that differ only in what the conversion loses (a fraction "
            "cast to an integer, a time formatted to a date) merge into one row of the target",
        )
    elif base == "InsertField":
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
    # HeaderFrom copy, Flatten (database keys have no nested fields): the key stays as it was


def _moves(t: dict[str, Any]) -> bool:
    return str(t.get("operation", "")).strip().lower() == "move"


def _check_envelope(t: dict[str, Any], base: str, path: tuple[str | int, ...], label: str, out: Collector) -> None:
    """Value SMTs on Debezium's envelope (before, after, source, op, ts_ms…)."""
    if base in _RESHAPING or base in ("Flatten", "Cast", "ValueToKey"):
        out.add(
            (*path, "type"),
            f"{label} reshapes the Debezium change event, but the Spark sink needs the envelope as the "
            "source writes it (before, after, source, op) to apply deletes, truncates and ordering; remove "
            "it (the sink already writes rows, not envelopes)",
        )
    elif base == "ReplaceField":
        _check_replace_value(t, path, label, out)
    elif base == "MaskField":
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
    elif base in ("InsertField", "HeaderToValue"):
        out.warn(
            path,
            f"{label} adds a field to the Debezium envelope, not to the row (inside before/after), so the "
            "Spark sink never writes it; remove it, or put it after an ExtractNewRecordState",
        )
    elif base == "HeaderFrom":
        fields = _list(t.get("fields"))
        hit = [f for f in fields if f in _ENVELOPE]
        if _moves(t) and hit:
            out.add(
                (*path, "fields"),
                f"{label} moves {', '.join(hit)} of the Debezium envelope into headers, which the Spark sink "
                "needs in the value; use operation=copy",
            )
        elif [f for f in fields if f not in _ENVELOPE and f not in ("ts_ms", "ts_us", "ts_ns", "transaction")]:
            out.add(
                (*path, "fields"),
                f"{label} reads top-level fields of the Debezium envelope, where "
                f"{', '.join(f for f in fields if f not in _ENVELOPE)} are not (the row's columns are inside "
                "before/after), so the source fails on every event; put it after an ExtractNewRecordState",
            )
    elif base == "TimestampConverter":
        field = str(t.get("field") or "").strip()
        if not field or field in _ENVELOPE:
            out.add(
                (*path, "field"),
                f"{label} converts {field or 'the whole value'} of the Debezium envelope, which is not a "
                "timestamp, so the source fails on every event; convert a column after an ExtractNewRecordState "
                "(or name before/after columns with field.syntax.version=V2)",
            )
    elif base == "TimestampRouter":
        out.add(
            (*path, "topic.format"),
            f"{label} sends each table's events to a topic per time period: the Spark sink would write one target "
            "table per period, and a change in a later period would not find its row; remove it",
        )
    elif base in ("ByLogicalTableRouter", "ToLogicalTopicRouter"):
        _check_logical_router(t, path, label, out)
    elif base == "ContentBasedRouter":
        out.warn(
            path,
            f"{label} routes events by their content: a row whose routed value changes has its later changes "
            "in another topic (another target table), and its old row stays in the first",
        )
    elif base == "Filter":
        _check_filter(t, path, label, out)


def _check_logical_router(t: dict[str, Any], path: tuple[str | int, ...], label: str, out: Collector) -> None:
    """Debezium's ByLogicalTableRouter merges tables into one topic (one target table)."""
    if str(t.get("key.enforce.uniqueness", "true")).strip().lower() == "false":
        out.add(
            (*path, "key.enforce.uniqueness"),
            f"{label} merges tables into one topic without telling their keys apart "
            "(key.enforce.uniqueness=false): the Spark sink applies them to one table, where rows of different "
            "tables with equal keys overwrite and delete each other; set key.enforce.uniqueness=true",
        )
    else:
        field = str(t.get("key.field.name") or _UNIQUE_KEY_FIELD)
        out.warn(
            path,
            f"{label} merges tables into one topic: the Spark sink applies them to one target table keyed by the "
            f"primary key plus {field} (the source table), with the union of their columns",
        )


def _check_flat(
    t: dict[str, Any], base: str, path: tuple[str | int, ...], label: str, flat: Unwrapped, out: Collector
) -> None:
    """Value SMTs after an ExtractNewRecordState: the row's columns are fine to change, the added op and
    position fields (and __deleted) are the sink's."""
    named = {
        "ReplaceField": _list(t.get("exclude"))
        + _list(t.get("blacklist"))
        + [r.split(":", 1)[0] for r in _list(t.get("renames"))],
        "MaskField": _list(t.get("fields")),
        "Cast": [s.split(":", 1)[0] for s in _list(t.get("spec")) if ":" in s],
        "TimestampConverter": [str(t.get("field") or "")],
        "InsertField": [
            str(t.get(k))
            for k in ("topic.field", "partition.field", "offset.field", "timestamp.field", "static.field")
            if t.get(k)
        ],
        "HeaderToValue": _list(t.get("fields")),
        "HeaderFrom": _list(t.get("fields")) if _moves(t) else [],
        "ValueToKey": _list(t.get("fields")),
    }
    hit = sorted(set(named.get(base, [])) & flat.needed)
    kept = _list(t.get("include")) + _list(t.get("whitelist")) if base == "ReplaceField" else []
    if kept and not hit:
        hit = sorted(f for f in flat.needed if f not in kept)
    if hit:
        out.add(
            path,
            f"{label} changes {', '.join(hit)}, which the ExtractNewRecordState before it added for the Spark "
            "sink (the operation and source position it orders changes by); leave those fields alone",
        )
    elif base in _RESHAPING:
        out.add(
            (*path, "type"),
            f"{label} replaces the flattened row, but the Spark sink needs the row with the operation and "
            "source position ExtractNewRecordState added; remove it",
        )
    elif base == "Cast" and not named["Cast"]:
        out.add((*path, "spec"), f"{label} casts the whole value, which is the row; name the columns to cast")
    elif base == "TimestampConverter" and not named["TimestampConverter"][0]:
        out.add((*path, "field"), f"{label} converts the whole value, which is the row; name the column in field")
    elif base == "ValueToKey":
        out.warn(
            (*path, "fields"),
            f"{label} keys the target by {', '.join(_list(t.get('fields'))) or 'value fields'} instead of the "
            "table's primary key: rows that share those values become one",
        )
    elif base == "HeaderFrom" and _moves(t):
        out.warn((*path, "fields"), f"{label} moves columns into headers: the target does not get them")
    elif base in ("TimestampRouter", "ByLogicalTableRouter", "ToLogicalTopicRouter", "ContentBasedRouter", "Filter"):
        _check_envelope(t, base, path, label, out)  # topics and dropped events: the same as for envelopes
    # Flatten (nested columns get dotted names), InsertField, MaskField, ReplaceField, Cast and
    # TimestampConverter on columns, HeaderToValue: they change the row, which the target then holds


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
