"""PostgreSQL types as the connector needs them: OID → name, kind, element, enum labels.

Loaded once from the catalog and refreshed when pgoutput announces an unknown type, so
domains, enums, arrays and extension types (hstore, ltree, citext) resolve without a
hard-coded table beyond the built-ins.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

VARHDRSZ = 4


@dataclass(frozen=True)
class PgType:
    oid: int
    name: str
    kind: str  # pg_type.typtype: b base, e enum, d domain, r range, c composite, p pseudo, m multirange
    category: str  # pg_type.typcategory: A array, N numeric, S string, ...
    element_oid: int = 0
    base_oid: int = 0  # domains: the underlying type
    enum_labels: tuple[str, ...] = ()
    type_modifier: int = -1  # domains: pg_type.typtypmod, e.g. numeric(8,3) of CREATE DOMAIN d AS numeric(8,3)


@dataclass(frozen=True)
class PgColumn:
    """A column as the converters see it: the type plus the modifier (precision, length)."""

    name: str
    type: PgType
    type_modifier: int = -1
    optional: bool = True

    @property
    def numeric_precision_scale(self) -> tuple[int, int] | None:
        """(precision, scale) of NUMERIC(p,s), or None when unconstrained."""
        if self.type_modifier < VARHDRSZ:
            return None
        t = self.type_modifier - VARHDRSZ
        return (t >> 16) & 0xFFFF, t & 0xFFFF

    @property
    def fractional_precision(self) -> int:
        """TIME/TIMESTAMP(p): p, or 6 when unspecified."""
        return self.type_modifier if 0 <= self.type_modifier <= 6 else 6

    @property
    def bit_length(self) -> int | None:
        return self.type_modifier if self.type_modifier > 0 else None


_CATALOG_SQL = """
SELECT t.oid, t.typname, t.typtype, t.typcategory, t.typelem, t.typbasetype,
       COALESCE((SELECT array_agg(e.enumlabel ORDER BY e.enumsortorder) FROM pg_enum e WHERE e.enumtypid = t.oid),
                '{}'),
       t.typtypmod
FROM pg_type t
"""


@dataclass
class TypeRegistry:
    types: dict[int, PgType] = field(default_factory=dict)

    @classmethod
    def load(cls, conn: Any) -> TypeRegistry:
        reg = cls()
        reg.refresh(conn)
        return reg

    def refresh(self, conn: Any) -> None:
        for oid, name, kind, category, elem, base, labels, typmod in conn.execute(_CATALOG_SQL).fetchall():
            self.types[oid] = PgType(oid, name, kind, category, elem, base, tuple(labels), int(typmod))

    def get(self, oid: int) -> PgType | None:
        return self.types.get(oid)

    def resolve(self, oid: int) -> PgType | None:
        """Follow domains down to their base type (Debezium maps a domain as its base)."""
        t = self.types.get(oid)
        seen = 0
        while t is not None and t.kind == "d" and t.base_oid and seen < 16:
            t = self.types.get(t.base_oid)
            seen += 1
        return t

    def domain_modifier(self, oid: int) -> int:
        """The type modifier a domain column takes from its domain (the nearest one that sets one), else -1.

        A column of a domain type has no modifier of its own (atttypmod -1); Debezium applies the
        domain's, so `CREATE DOMAIN d AS numeric(8,3)` maps as numeric(8,3) and a domain of varbit(3) as
        Bits of length 3.
        """
        t = self.types.get(oid)
        seen = 0
        while t is not None and t.kind == "d" and seen < 16:
            if t.type_modifier != -1:
                return t.type_modifier
            t = self.types.get(t.base_oid)
            seen += 1
        return -1
