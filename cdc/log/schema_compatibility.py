"""Avro schema compatibility as Confluent Schema Registry's levels define it, for the embedded registry.

Mirrors Confluent's `AvroCompatibilityLevel` / `CompatibilityChecker` (schema-registry's
`core/.../avro/AvroCompatibilityChecker.java`): BACKWARD means the new schema can read data
written with the last one, FORWARD the reverse, FULL both; a `_TRANSITIVE` level checks every
live version instead of the last. The verdict is the `avro` package's
`avro.compatibility.ReaderWriterCompatibilityChecker` (Apache Avro's own port of Java's
SchemaCompatibility), not hand-written rules. That checker reports a change inside a union
(Debezium's `after: ["null", Value]`) only as "reader union lacking writer type: RECORD" at the
union; `explain` walks the two schemas down to the field that changed, so the error names the
column, not just `after`.

Bounded (issue 33): a check runs against a `Deadline` (the registry's
`schema.registry.compatibility.timeout.ms`, and events that cancel it when the client leaves
or the worker stops), tested at every schema pair the checker visits, so a hostile pair of
schemas (two unions of thousands of records: a cross product) stops with `CheckAborted`
instead of holding a core. The checker is avro's with its two super-linear spots replaced:
the per-field merge (avro copies the growing list of incompatibilities at every field) and an
unbounded memo (one entry per schema pair visited); one checker is shared by the whole check,
so `explain`'s walk reuses the verdicts of the first pass.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from avro.compatibility import (
    CompatibleResult,
    ReaderWriterCompatibilityChecker,
    SchemaCompatibilityResult,
    SchemaCompatibilityType,
    SchemaIncompatibilityType,
    SchemaType,
    incompatible,
)
from avro.schema import Field, NamedSchema, RecordSchema, Schema, UnionSchema

LEVELS = (
    "NONE",
    "BACKWARD",
    "BACKWARD_TRANSITIVE",
    "FORWARD",
    "FORWARD_TRANSITIVE",
    "FULL",
    "FULL_TRANSITIVE",
)
DEFAULT_LEVEL = "BACKWARD"

# Completed verdicts kept by one check's memo before it is emptied (the pairs still being
# checked stay: they are how a recursive named type is recognised). About 100 MB at most.
_MEMO_MAX = 200_000
_IN_PROGRESS = SchemaCompatibilityType.recursion_in_progress


class CheckAborted(Exception):
    """A compatibility check stopped before its verdict: `timed_out` (its Deadline passed) or
    cancelled (the client left, the registry is closing)."""

    def __init__(self, timed_out: bool) -> None:
        super().__init__("timed out" if timed_out else "cancelled")
        self.timed_out = timed_out


class Deadline:
    """When a check must give up: `seconds` from now (None: never), or as soon as one of
    `cancels` is set. `check()` is cheap (a clock read), so the checker calls it at every pair."""

    def __init__(self, seconds: float | None = None, *cancels: threading.Event | None) -> None:
        self.at = None if seconds is None else time.monotonic() + seconds
        self.cancels = tuple(c for c in cancels if c is not None)

    def check(self) -> None:
        """Raise CheckAborted if the time is up or the check was cancelled."""
        for cancel in self.cancels:
            if cancel.is_set():
                raise CheckAborted(timed_out=False)
        if self.at is not None and time.monotonic() > self.at:
            raise CheckAborted(timed_out=True)


class BoundedChecker(ReaderWriterCompatibilityChecker):
    """avro's ReaderWriterCompatibilityChecker under a Deadline, linear in the fields of a record
    and with a memo of bounded size. Its verdicts are avro's (the same result objects)."""

    def __init__(self, deadline: Deadline | None = None) -> None:
        super().__init__()
        self.deadline = deadline or Deadline()
        self._memo: dict[tuple[int, int], SchemaCompatibilityResult] = {}
        self._fields: dict[int, dict[str, Field]] = {}

    def get_compatibility(
        self,
        reader: Schema,
        writer: Schema,
        reference_token: str = ReaderWriterCompatibilityChecker.ROOT_REFERENCE_TOKEN,
        location: list[str] | None = None,
    ) -> SchemaCompatibilityResult:
        """avro's, keyed by the pair's ids (avro's key hashes `id ^ id`, which collides a lot) and
        under the Deadline. A pair met again while still being checked is a recursive named type:
        compatible so far, as in avro."""
        self.deadline.check()
        key = (id(reader), id(writer))
        found = self._memo.get(key)
        if found is not None:
            return CompatibleResult if found.compatibility is _IN_PROGRESS else found
        if len(self._memo) > _MEMO_MAX:
            self._memo = {k: v for k, v in self._memo.items() if v.compatibility is _IN_PROGRESS}
        self._memo[key] = SchemaCompatibilityResult(_IN_PROGRESS)
        result = self.calculate_compatibility(reader, writer, [*(location or []), reference_token])
        self._memo[key] = result
        return result

    def writer_field(self, writer: RecordSchema, reader_field: Field) -> Field | None:
        """avro's lookup_writer_field (by name, then the reader field's aliases) over a dict built
        once per record: avro's `fields_dict` builds a new dict at every call."""
        fields = self._fields.get(id(writer))
        if fields is None:
            fields = self._fields[id(writer)] = {f.name: f for f in writer.fields}
        direct = fields.get(reader_field.name)
        if direct is not None:
            return direct
        aliases = reader_field.props.get("aliases")
        if isinstance(aliases, list):
            for alias in aliases:
                found = fields.get(alias) if isinstance(alias, str) else None
                if found is not None:
                    return found
        return None

    def check_reader_writer_record_fields(
        self, reader: RecordSchema, writer: RecordSchema, location: list[str]
    ) -> SchemaCompatibilityResult:
        """avro's, with its `merge` done in place: the same result, without copying the list of
        incompatibilities found so far at every field (quadratic for a wide incompatible record)."""
        compatible = True
        kinds: list[SchemaIncompatibilityType] = []
        messages: set[str] = set()
        locations: set[str] = {"/"}
        for i, reader_field in enumerate(reader.fields):
            self.deadline.check()
            writer_field = self.writer_field(writer, reader_field)
            where = [*location, "fields", str(i)]
            if writer_field is None:
                if reader_field.has_default:
                    continue
                if reader_field.type.type == SchemaType.ENUM and reader_field.type.props.get("default"):
                    that = self.get_compatibility(reader_field.type, writer, "type", where)
                else:
                    that = incompatible(
                        SchemaIncompatibilityType.reader_field_missing_default_value, reader_field.name, where
                    )
            else:
                that = self.get_compatibility(reader_field.type, writer_field.type, "type", where)
            kinds.extend(that.incompatibilities)
            if compatible:  # avro's merge: the first non-compatible result sets messages and locations
                if that.compatibility is not SchemaCompatibilityType.compatible:
                    compatible = False
                    state = that.compatibility
                    messages, locations = set(that.messages), set(that.locations)
            else:
                messages |= that.messages
                locations |= that.locations
        if compatible:
            return SchemaCompatibilityResult(SchemaCompatibilityType.compatible, kinds)
        return SchemaCompatibilityResult(state, kinds, messages, locations)


@dataclass(frozen=True)
class Incompatibility:
    """One reason a schema pair is incompatible: Confluent's `{errorType, description, additionalInfo}`."""

    error_type: str  # READER_FIELD_MISSING_DEFAULT_VALUE, TYPE_MISMATCH, MISSING_UNION_BRANCH, ...
    field: str  # dotted path of the field in the schemas ("after.city"), "" for the root
    description: str

    def render(self) -> str:
        """Confluent's rendering of one detail, `{errorType:'…', description:'…', additionalInfo:'…'}`."""
        return (
            f"{{errorType:'{self.error_type}', description:'{self.description}', additionalInfo:'{self.field or '/'}'}}"
        )


def _compatible(checker: BoundedChecker, reader: Schema, writer: Schema) -> bool:
    result = checker.get_compatibility(reader, writer)
    return result.compatibility is SchemaCompatibilityType.compatible


def _same_kind(a: Schema, b: Schema) -> bool:
    if isinstance(a, NamedSchema) and isinstance(b, NamedSchema):
        return a.type == b.type and a.fullname == b.fullname
    return a.type == b.type


def _describe(kind: str, field: str, detail: str, reader_role: str, writer_role: str) -> Incompatibility:
    where = f"field '{field}'" if field else "the schema"
    texts = {
        "READER_FIELD_MISSING_DEFAULT_VALUE": (
            f"The field '{field}' in the {reader_role} schema has no default value and is missing in the "
            f"{writer_role} schema: give it a default (or make it optional with default null)"
        ),
        "TYPE_MISMATCH": (
            f"The type of {where} in the {reader_role} schema does not match the {writer_role} schema: {detail}"
        ),
        "MISSING_UNION_BRANCH": (
            f"The type of {where} in the {reader_role} schema lacks a union branch of the {writer_role} schema: "
            f"{detail}"
        ),
    }
    return Incompatibility(
        kind,
        field,
        texts.get(kind, f"{kind.lower().replace('_', ' ')} at {where} ({reader_role} vs {writer_role}): {detail}"),
    )


def explain(
    reader: Schema,
    writer: Schema,
    reader_role: str = "new",
    writer_role: str = "old",
    checker: BoundedChecker | None = None,
) -> list[Incompatibility]:
    """Why `reader` cannot read data written with `writer`, down to the fields; [] when it can.
    CheckAborted if `checker`'s Deadline passes first."""
    checker = checker or BoundedChecker()
    if _compatible(checker, reader, writer):
        return []
    found = _walk(checker, reader, writer, (), reader_role, writer_role, set())
    if found:
        return found
    result = checker.get_compatibility(reader, writer)
    kinds = [t.name.upper() for t in result.incompatibilities] or ["INCOMPATIBLE"]
    detail = "; ".join(sorted(result.messages)) + f" at {', '.join(sorted(result.locations))}"
    return [_describe(kinds[0], "", detail, reader_role, writer_role)]


def _walk(
    checker: BoundedChecker,
    reader: Schema,
    writer: Schema,
    path: tuple[str, ...],
    reader_role: str,
    writer_role: str,
    seen: set[tuple[int, int]],
) -> list[Incompatibility]:
    """The incompatibilities of an incompatible pair, attributed to the innermost field we can name."""
    key = (id(reader), id(writer))
    if key in seen:  # a recursive named type: already being explained further up
        return []
    seen = seen | {key}
    field = ".".join(path)
    if isinstance(reader, UnionSchema) or isinstance(writer, UnionSchema):
        readers = reader.schemas if isinstance(reader, UnionSchema) else [reader]
        writers = writer.schemas if isinstance(writer, UnionSchema) else [writer]
        out: list[Incompatibility] = []
        for branch in writers:
            checker.deadline.check()
            if any(_compatible(checker, r, branch) for r in readers):
                continue
            match = next((r for r in readers if _same_kind(r, branch)), None)
            if match is None:
                name = branch.fullname if isinstance(branch, NamedSchema) else branch.type
                out.append(_describe("MISSING_UNION_BRANCH", field, f"no branch for {name}", reader_role, writer_role))
            else:
                out.extend(_walk(checker, match, branch, path, reader_role, writer_role, seen))
        return out
    if isinstance(reader, RecordSchema) and isinstance(writer, RecordSchema) and reader.fullname == writer.fullname:
        out = []
        for reader_field in reader.fields:
            checker.deadline.check()
            written = checker.writer_field(writer, reader_field)
            inner = (*path, reader_field.name)
            if written is None:
                if not reader_field.has_default:
                    out.append(
                        _describe("READER_FIELD_MISSING_DEFAULT_VALUE", ".".join(inner), "", reader_role, writer_role)
                    )
            elif not _compatible(checker, reader_field.type, written.type):
                out.extend(_walk(checker, reader_field.type, written.type, inner, reader_role, writer_role, seen))
        if out:
            return out
    result = checker.get_compatibility(reader, writer)
    kinds = [t.name.upper() for t in result.incompatibilities] or ["INCOMPATIBLE"]
    return [_describe(kinds[0], field, "; ".join(sorted(result.messages)), reader_role, writer_role)]


def check_pair(level: str, new: Schema, old: Schema, deadline: Deadline | None = None) -> list[Incompatibility]:
    """The incompatibilities of `new` with one earlier schema under `level` (its direction only);
    CheckAborted if `deadline` passes first."""
    checker = BoundedChecker(deadline)
    out: list[Incompatibility] = []
    if level.startswith(("BACKWARD", "FULL")):
        out.extend(explain(new, old, "new", "old", checker))
    if level.startswith(("FORWARD", "FULL")):
        out.extend(explain(old, new, "old", "new", checker))
    return out


def check(
    level: str, new: Schema, previous: Sequence[Schema], deadline: Deadline | None = None
) -> tuple[int, list[Incompatibility]] | None:
    """The first of `previous` (live versions, oldest first) that `new` is incompatible with under
    `level`, as (its index, the incompatibilities), newest checked first as Confluent does; None if none.
    CheckAborted when `deadline` (the whole check's, across versions) passes first."""
    if level == "NONE" or not previous:
        return None
    start = 0 if level.endswith("_TRANSITIVE") else len(previous) - 1
    for index in range(len(previous) - 1, start - 1, -1):
        issues = check_pair(level, new, previous[index], deadline)
        if issues:
            return index, issues
    return None
