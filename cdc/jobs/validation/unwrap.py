"""Debezium's ExtractNewRecordState ("unwrap") in a job against what the Spark sink needs.

The sink applies a flattened row like an envelope only when the row carries the operation and the
source position (its `add.fields`) and a delete arrives as a row with them
(`delete.tombstone.handling.mode=rewrite`); which fields, and how they are named, is the sink's
rule (cdc_spark/decode/unwrapped.py), imported from there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cdc.jobs.spec import source_family
from cdc.jobs.validation.problems import Collector

# Bare add.fields names that Debezium does not take from `source` (AbstractExtractNewRecordState).
_TOP_LEVEL = frozenset({"op", "ts_ms", "ts_us", "ts_ns"})
_TRANSACTION = frozenset({"id", "total_order", "data_collection_order"})
_ROWLESS_DELETES = {"tombstone", "delete-to-tombstone", "none"}


@dataclass(frozen=True)
class Unwrapped:
    """What the rest of the chain sees after the unwrap: the added fields the sink reads."""

    needed: frozenset[str]  # value field names the sink turns into its own columns


def _list(value: Any) -> list[str]:
    if value is None:
        return []
    items = value if isinstance(value, list) else str(value).split(",")
    return [str(v).strip() for v in items if str(v).strip()]


def _entries(t: dict[str, Any]) -> list[tuple[str, str | None, str, str | None, bool]]:
    """(entry, struct, field, new name, qualified) per add.fields entry, as Debezium's FieldReference reads it."""
    out = []
    for entry in _list(t.get("add.fields")):
        name, _, new = entry.partition(":")
        struct, _, field = name.rpartition(".")
        qualified = bool(struct)
        if not struct:
            struct = None if field in _TOP_LEVEL else "transaction" if field in _TRANSACTION else "source"
        out.append((entry, struct or None, field, new or None, qualified))
    return out


def check_unwrap(
    job: dict[str, Any], t: dict[str, Any], path: tuple[str | int, ...], label: str, out: Collector
) -> Unwrapped:
    """The add.fields, delete handling, routing and field dropping of one ExtractNewRecordState."""
    from cdc_spark.decode import unwrapped as rule

    family = source_family(str((job.get("source") or {}).get("connector.class", "")))
    prefix = str(t.get("add.fields.prefix", rule.DEFAULT_PREFIX) or "")
    entries = _entries(t)
    sink_fields = _sink_fields()
    ours = [
        (e, s, f, new, q)
        for e, s, f, new, q in entries
        if (f == "op" and s is None) or (s == "source" and f in sink_fields)
    ]
    plain = {f for _, _, f, new, _ in ours if new is None}
    renamed = [e for e, _, _, new, _ in ours if new is not None]
    families = [family] if family in rule.REQUIRED else list(rule.REQUIRED)
    missing = min(([f for f in ("op", *rule.REQUIRED[fam]) if f not in plain] for fam in families), key=len)
    if missing:
        which = f" ({'renamed: ' + ', '.join(renamed) + '; the sink finds them by Debezium names'})" if renamed else ""
        out.add(
            (*path, "add.fields"),
            f"{label} drops what the sink needs to order changes (missing {', '.join(_entry(f) for f in missing)})"
            f"{which}: set add.fields={rule.add_fields(family)}",
        )
    elif "snapshot" not in plain:
        out.warn(
            (*path, "add.fields"),
            f"{label} leaves out source.snapshot, so the sink cannot tell a completed snapshot and keeps rows "
            "deleted while an interrupted snapshot was retaken; add source.snapshot to add.fields",
        )
    _check_deletes(t, path, label, out)
    out.warn(
        path,
        f"{label} drops TRUNCATE events, so the target keeps rows truncated at the source (`cdc verify` "
        "reports them); truncate the target too, or leave ExtractNewRecordState out (the sink applies envelopes)",
    )
    if str(t.get("route.by.field") or "").strip():
        out.add(
            (*path, "route.by.field"),
            f"{label} names each record's topic by a row value (route.by.field), but the Spark sink reads "
            "<prefix>.<db>.<table> topics only and keeps one target per table; remove route.by.field and name the "
            "target with sink.tables.<db>.<table>.target",
        )
    if str(t.get("drop.fields.from.key", "")).strip().lower() == "true":
        out.add(
            (*path, "drop.fields.from.key"),
            f"{label} drops fields from the record key (drop.fields.from.key=true), and the Spark sink merges rows "
            "by that key: rows differing only in a dropped column become one; set it to false",
        )
    elif str(t.get("drop.fields.header.name") or "").strip():
        out.warn(
            (*path, "drop.fields.header.name"),
            f"{label} drops the fields a header names from some records: those columns are null in the target "
            "for these rows",
        )
    names = {prefix + (new or (f"{s}_{f}" if q else f)) for _, s, f, new, q in ours}
    return Unwrapped(frozenset({rule.DELETED, *names}))


def _sink_fields() -> tuple[str, ...]:
    from cdc_spark.decode import unwrapped as rule

    return ("op", *sorted({f for fields in rule.REQUIRED.values() for f in fields}), *rule.OPTIONAL)


def _entry(field: str) -> str:
    return field if field == "op" else f"source.{field}"


def _check_deletes(t: dict[str, Any], path: tuple[str | int, ...], label: str, out: Collector) -> None:
    """Deletes must reach the sink as rows with their position: `rewrite` (or rewrite-with-tombstone)."""
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
        key, setting = "delete.tombstone.handling.mode", "tombstone"  # Debezium's default
    if setting == "drop":
        out.add(
            (*path, key),
            f"{label} drops delete events (delete handling: drop), so the target keeps every deleted row; set "
            "delete.tombstone.handling.mode=rewrite (a delete becomes its before row with __deleted=true)",
        )
    elif setting in _ROWLESS_DELETES:
        out.add(
            (*path, key),
            f"{label} turns each delete into a null value without its source position (delete handling: "
            f"{setting}), so the sink cannot order it against the key's other changes; set "
            "delete.tombstone.handling.mode=rewrite (a delete becomes its before row with __deleted=true)",
        )
