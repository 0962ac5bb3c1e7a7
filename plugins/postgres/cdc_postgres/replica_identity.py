"""`replica.identity.autoset.values`: set REPLICA IDENTITY on captured tables at start, as Debezium does.

The value is a comma-separated list of `<schema.table regex>:<identity>` entries, identity being
DEFAULT, FULL, NOTHING or `INDEX <index name>` (case-insensitive). A regex must match the whole
`schema.table` name, case-insensitively; a table matched by two entries is an error (Debezium's
"More than one Regular expressions matched table"). A table already at the wanted identity is left
alone, so the connector needs to own only the tables it really changes.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

import psycopg

from cdc.api import ConfigException
from cdc_postgres.connection import PostgresConnection, PostgresConnectorError, _ident

log = logging.getLogger(__name__)

KEY = "replica.identity.autoset.values"
_ENTRY = re.compile(r"^\s*(?P<table>[^\s:]+):(?P<identity>DEFAULT|FULL|NOTHING|INDEX\s+(?P<index>\S+))\s*$", re.I)
_CODES = {"DEFAULT": "d", "FULL": "f", "NOTHING": "n", "INDEX": "i"}


@dataclass(frozen=True)
class Rule:
    pattern: re.Pattern[str]
    identity: str  # DEFAULT, FULL, NOTHING or INDEX
    index: str | None = None

    def sql(self) -> str:
        """The clause after ALTER TABLE … REPLICA IDENTITY."""
        return f"USING INDEX {_ident(self.index)}" if self.index is not None else self.identity

    def __str__(self) -> str:
        return f"INDEX {self.index}" if self.index is not None else self.identity


def parse(value: str | None) -> list[Rule]:
    """The rules of a config value; ConfigException (naming the bad entry) when malformed."""
    rules: list[Rule] = []
    for entry in (value or "").split(","):
        if not entry.strip():
            continue
        m = _ENTRY.match(entry)
        if m is None:
            raise ConfigException(
                f"{KEY}: {entry.strip()!r} is not '<schema.table regex>:<identity>' with identity DEFAULT, FULL, "
                "NOTHING or INDEX <index name>; e.g. public.orders:FULL,public\\..*_audit:DEFAULT",
                KEY,
                value,
            )
        try:
            pattern = re.compile(m["table"], re.IGNORECASE)
        except re.error as e:
            raise ConfigException(
                f"{KEY}: {m['table']!r} is not a valid regular expression ({e}); escape literal dots as \\.",
                KEY,
                value,
            ) from e
        identity = m["identity"].split()[0].upper()
        rules.append(Rule(pattern, identity, m["index"]))
    return rules


class ValidAutosetValues:
    """ConfigDef validator: the value parses (so `cdc validate` reports a bad entry up front)."""

    def __call__(self, name: str, value: Any) -> None:
        parse(value)

    def __str__(self) -> str:
        return "comma-separated <schema.table regex>:<DEFAULT|FULL|NOTHING|INDEX name> entries"


def rule_for(rules: list[Rule], table: str) -> Rule | None:
    matching = [r for r in rules if r.pattern.fullmatch(table)]
    if len(matching) > 1:
        raise PostgresConnectorError(
            f"{KEY}: table {table} matches more than one entry ({', '.join(r.pattern.pattern for r in matching)}); "
            "make the regexes disjoint so each table gets one replica identity"
        )
    return matching[0] if matching else None


def _current(admin: PostgresConnection, oid: int) -> tuple[str, str | None]:
    """(relreplident, name of the replica identity index or None)."""
    return admin.execute(
        "SELECT c.relreplident, (SELECT ic.relname FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid"
        " WHERE i.indrelid = c.oid AND i.indisreplident) FROM pg_class c WHERE c.oid = %s",
        (oid,),
    ).fetchone()


def apply(admin: PostgresConnection, value: str | None, tables: list[tuple[int, str, str]]) -> None:
    """ALTER TABLE … REPLICA IDENTITY for each captured table a rule matches and that differs."""
    rules = parse(value)
    if not rules:
        return
    for oid, ns, name in tables:
        table = f"{ns}.{name}"
        rule = rule_for(rules, table)
        if rule is None:
            continue
        code, index = _current(admin, oid)
        wanted = _CODES[rule.identity]
        if code == wanted and (rule.index is None or index == rule.index):
            log.info("Replica identity for table '%s' is already %s", table, rule)
            continue
        sql = f"ALTER TABLE {_ident(ns)}.{_ident(name)} REPLICA IDENTITY {rule.sql()}"
        try:
            admin.execute(sql)
        except psycopg.errors.InsufficientPrivilege as e:
            raise PostgresConnectorError(
                f"{KEY}: cannot set REPLICA IDENTITY {rule} on table {table}: {str(e).strip()}; only its owner "
                f"(or a superuser) may. Run {sql}; as the owner, or make database.user the table's owner, or "
                f"remove {table} from {KEY}"
            ) from e
        except psycopg.Error as e:  # e.g. a missing index, or one that cannot identify rows
            raise PostgresConnectorError(
                f"{KEY}: cannot set REPLICA IDENTITY {rule} on table {table}: {str(e).strip()}. An INDEX must name "
                f"a unique, non-partial, non-deferrable index of {table} over NOT NULL columns"
            ) from e
        log.info("Replica identity set to %s for table '%s'", rule, table)
