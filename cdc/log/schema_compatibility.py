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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from avro.compatibility import (
    ReaderWriterCompatibilityChecker,
    SchemaCompatibilityType,
    lookup_writer_field,
)
from avro.schema import NamedSchema, RecordSchema, Schema, UnionSchema

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


def _compatible(reader: Schema, writer: Schema) -> bool:
    result = ReaderWriterCompatibilityChecker().get_compatibility(reader, writer)
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
    reader: Schema, writer: Schema, reader_role: str = "new", writer_role: str = "old"
) -> list[Incompatibility]:
    """Why `reader` cannot read data written with `writer`, down to the fields; [] when it can."""
    if _compatible(reader, writer):
        return []
    found = _walk(reader, writer, (), reader_role, writer_role, set())
    if found:
        return found
    result = ReaderWriterCompatibilityChecker().get_compatibility(reader, writer)
    kinds = [t.name.upper() for t in result.incompatibilities] or ["INCOMPATIBLE"]
    detail = "; ".join(sorted(result.messages)) + f" at {', '.join(sorted(result.locations))}"
    return [_describe(kinds[0], "", detail, reader_role, writer_role)]


def _walk(
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
            if any(_compatible(r, branch) for r in readers):
                continue
            match = next((r for r in readers if _same_kind(r, branch)), None)
            if match is None:
                name = branch.fullname if isinstance(branch, NamedSchema) else branch.type
                out.append(_describe("MISSING_UNION_BRANCH", field, f"no branch for {name}", reader_role, writer_role))
            else:
                out.extend(_walk(match, branch, path, reader_role, writer_role, seen))
        return out
    if isinstance(reader, RecordSchema) and isinstance(writer, RecordSchema) and reader.fullname == writer.fullname:
        out = []
        for reader_field in reader.fields:
            written = lookup_writer_field(writer, reader_field)
            inner = (*path, reader_field.name)
            if written is None:
                if not reader_field.has_default:
                    out.append(
                        _describe("READER_FIELD_MISSING_DEFAULT_VALUE", ".".join(inner), "", reader_role, writer_role)
                    )
            elif not _compatible(reader_field.type, written.type):
                out.extend(_walk(reader_field.type, written.type, inner, reader_role, writer_role, seen))
        if out:
            return out
    result = ReaderWriterCompatibilityChecker().get_compatibility(reader, writer)
    kinds = [t.name.upper() for t in result.incompatibilities] or ["INCOMPATIBLE"]
    return [_describe(kinds[0], field, "; ".join(sorted(result.messages)), reader_role, writer_role)]


def check_pair(level: str, new: Schema, old: Schema) -> list[Incompatibility]:
    """The incompatibilities of `new` with one earlier schema under `level` (its direction only)."""
    out: list[Incompatibility] = []
    if level.startswith(("BACKWARD", "FULL")):
        out.extend(explain(new, old, "new", "old"))
    if level.startswith(("FORWARD", "FULL")):
        out.extend(explain(old, new, "old", "new"))
    return out


def check(level: str, new: Schema, previous: Sequence[Schema]) -> tuple[int, list[Incompatibility]] | None:
    """The first of `previous` (live versions, oldest first) that `new` is incompatible with under
    `level`, as (its index, the incompatibilities), newest checked first as Confluent does; None if none."""
    if level == "NONE" or not previous:
        return None
    start = 0 if level.endswith("_TRANSITIVE") else len(previous) - 1
    for index in range(len(previous) - 1, start - 1, -1):
        issues = check_pair(level, new, previous[index])
        if issues:
            return index, issues
    return None
