"""Debezium's placeholder for a value the source did not send: how it looks, raw and flattened.

A PostgreSQL update leaves unchanged TOASTed values out unless the table has REPLICA
IDENTITY FULL, and Debezium puts `unavailable.value.placeholder` there, in the column's
own type (as the PostgreSQL connector's toast.py writes it): the text itself; its bytes;
`{p: p}` for hstore; for arrays, one placeholder element (text, UUID, bytes) or one
element per placeholder byte (numbers, booleans, decimals of either kind). It means "unchanged", so the sink keeps
the value it has instead of storing the placeholder (apply/unchanged.py).

Two tests: `suspects` over raw JSON values, cheap and generous (a false hit only keeps a
few more events of a batch), and `masks` over flattened columns, exact per cell.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import uuid
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

DEFAULT = "__debezium_unavailable_value"
META_COLUMNS = frozenset(("__op", "__seq", "__source_ts_ms", "__deleted"))


def _compact(value: Any) -> str:
    """JSON text as the flattening writes arrays and maps (types._json_text)."""
    return json.dumps(value, separators=(",", ":"))


@dataclass(frozen=True)
class Placeholder:
    raw: bytes

    @classmethod
    def parse(cls, configured: str) -> Placeholder:
        """As the connector reads `unavailable.value.placeholder`: `hex:<digits>` for raw bytes,
        otherwise its UTF-8 bytes. A ValueError says what is wrong with it."""
        if configured.startswith("hex:"):
            try:
                raw = bytes.fromhex(configured[4:])
            except ValueError:
                raw = b""
            if not raw:
                raise ValueError(f"{configured!r}: after 'hex:' give the placeholder's bytes as hex digits (hex:5f5f)")
            return cls(raw)
        if not configured:
            raise ValueError(f"it must not be empty: set the source connector's value (Debezium's default: {DEFAULT})")
        return cls(configured.encode())

    @cached_property
    def text(self) -> str:
        return self.raw.decode("utf-8", errors="replace")

    @cached_property
    def _per_byte(self) -> list[int]:
        return [b - 256 if b > 127 else b for b in self.raw]  # Java's signed bytes

    @cached_property
    def _arrays(self) -> list[list[Any]]:
        """The array forms, as JSON values."""
        md5 = uuid.UUID(bytes=hashlib.md5(self.raw, usedforsecurity=False).digest(), version=3)
        unscaled = [base64.b64encode(b.to_bytes(1, "big", signed=True)).decode() for b in self._per_byte]
        return [
            [self.text],
            [str(md5)],
            [base64.b64encode(self.raw).decode()],
            self._per_byte,
            [float(b) for b in self._per_byte],
            [b != 0 for b in self._per_byte],
            unscaled,  # Decimal elements: one unscaled byte each, base64 as JsonConverter writes it
            [{"scale": 0, "value": u} for u in unscaled],  # VariableScaleDecimal elements (numeric[])
        ]

    @cached_property
    def text_forms(self) -> pa.Array:
        """Every text a flattened string column holds where the value was not sent."""
        pair = {self.text: self.text}
        forms = {self.text, _compact(pair), json.dumps(pair, separators=(",", ":"), ensure_ascii=False)}
        forms.update(_compact(a) for a in self._arrays)
        return pa.array(sorted(forms), pa.string())

    @cached_property
    def suspect_pattern(self) -> str:
        """A regex over raw JsonConverter text that every event carrying the placeholder matches."""
        needles = {json.dumps(self.text, ensure_ascii=ascii)[1:-1] for ascii in (True, False)}
        needles.add(base64.b64encode(self.raw).decode())
        needles.update(_compact(a)[1:-1] for a in self._arrays[1:])
        return "|".join(re.escape(n) for n in sorted(needles) if n)

    @cached_property
    def _value_pattern(self) -> str:
        """A regex for `:<placeholder>` and what ends it, as a field of raw JsonConverter text."""
        pair = {self.text: self.text}
        values = [self.text, _compact(pair), base64.b64encode(self.raw).decode()]  # text, hstore as JSON, bytes
        raw = {json.dumps(v, ensure_ascii=False) for v in values}
        raw.update(json.dumps(v, ensure_ascii=False, separators=(",", ":")) for v in [pair, *self._arrays])
        return ":(?:" + "|".join(re.escape(f) for f in sorted(raw)) + ")(?:,|}|$)"

    def signatures(self, values: pa.Array) -> pa.Array:
        """Per raw value, the names of its fields that hold the placeholder, in order: equal texts
        mean the same columns were not sent. Null where `before` is not null (it could hold them)."""
        text = values.cast(pa.string())
        # Cut at each placeholder value: every piece but the last ends with its field's name.
        pieces = pc.split_pattern_regex(text, pattern=self._value_pattern)
        names = pc.struct_field(pc.extract_regex(pc.list_flatten(pieces), r'(?P<n>"(?:[^"\\]|\\.)*")$'), [0])
        joined = pc.binary_join(pa.ListArray.from_arrays(pieces.offsets, pc.fill_null(names, "")), "")
        plain = pc.match_substring_regex(text, r'^(?:\{"schema":.*,"payload":)?\{"before":null,')
        return pc.if_else(plain, joined, pa.scalar(None, pa.string()))

    def earlier_needed(self, rows: pa.Table, group: pa.Array) -> pa.Array:
        """Indices of the events the fill may need (apply/unchanged.py) besides each group's
        latest: for a group whose latest event may carry the placeholder, its events back to
        the latest one that carries none (or a delete), less those whose missing columns are
        the latest's own (they cannot supply them). `rows` holds `value`, `__op`, `__seq`,
        `offset`; `group` (no nulls) names each row's key."""
        n = rows.num_rows
        if n < 2:
            return pa.array([], pa.int64())
        order = pc.sort_indices(
            pa.table({"g": group, "s": rows.column("__seq"), "o": rows.column("offset")}),
            sort_keys=[("g", "ascending"), ("s", "descending"), ("o", "descending")],
        )
        g = group.take(order)
        start = pa.concat_arrays([pa.array([True]), pc.not_equal(g.slice(1), g.slice(0, n - 1))])
        here = pa.array(np.arange(n, dtype=np.int64))
        latest = pc.fill_null_forward(pc.if_else(start, here, pa.scalar(None, pa.int64())))  # each group's first
        values = rows.column("value").combine_chunks().take(order)
        suspect = self.suspects(values)
        wanted = pc.and_(suspect.take(latest), pc.invert(start))  # the rest of groups whose latest is suspect
        if not pc.any(wanted).as_py():
            return pa.array([], pa.int64())
        full = pc.or_(pc.invert(suspect), pc.equal(rows.column("__op").combine_chunks().take(order), "d"))
        # Whether a full event lies between a row and its group's latest: nothing older is needed.
        prior = pc.if_else(full, here, pa.scalar(None, pa.int64()))
        prior = pc.if_else(start, -1, pa.concat_arrays([pa.nulls(1, pa.int64()), prior.slice(0, n - 1)]))
        shadowed = pc.greater_equal(pc.fill_null_forward(prior), 0)
        sig = pa.nulls(n, pa.string())
        if pc.any(pc.and_(wanted, suspect)).as_py():
            sig = self.signatures(values)
        same = pc.fill_null(pc.and_(pc.equal(sig, sig.take(latest)), pc.not_equal(sig, "")), False)
        keep = pc.and_(pc.and_(wanted, pc.invert(shadowed)), pc.or_(full, pc.invert(same)))
        return order.filter(keep)

    def suspects(self, values: pa.Array | pa.ChunkedArray) -> pa.Array:
        """Per raw value: might it carry the placeholder? (null values: no)."""
        if len(values) == 0:
            return pa.array([], pa.bool_())
        hits = pc.match_substring_regex(values, self.suspect_pattern)
        if isinstance(hits, pa.ChunkedArray):
            hits = hits.combine_chunks()
        return pc.fill_null(hits, False)

    def masks(self, table: pa.Table, skip: frozenset[str] = frozenset()) -> dict[str, pa.Array]:
        """Column → rows whose value is the placeholder (not for deletes, keys or `skip`)."""
        live = pc.invert(table.column("__deleted").combine_chunks()) if "__deleted" in table.column_names else None
        out: dict[str, pa.Array] = {}
        for f in table.schema:
            if f.name in META_COLUMNS or f.name in skip:
                continue
            if pa.types.is_string(f.type) or pa.types.is_large_string(f.type):
                forms = self.text_forms.cast(f.type)
            elif pa.types.is_binary(f.type) or pa.types.is_large_binary(f.type):
                forms = pa.array([self.raw], f.type)
            else:
                continue
            mask = pc.fill_null(pc.is_in(table.column(f.name).combine_chunks(), value_set=forms), False)
            if live is not None:
                mask = pc.and_(mask, live)
            if pc.any(mask).as_py():
                out[f.name] = mask
        return out
