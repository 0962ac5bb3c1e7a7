"""PostgresConnectorConfig: Debezium's PostgreSQL connector keys, on top of the shared ones."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cdc.api import ConfigDef, ConfigType, Importance, NonEmptyString, Range, ValidRegex, ValidString
from cdc_debezium.config import add_cross_field_errors, define_common
from cdc_postgres.replica_identity import ValidAutosetValues

SNAPSHOT_MODES = ("initial", "initial_only", "no_data", "never", "when_needed", "always")
AUTOCREATE_MODES = ("all_tables", "filtered", "disabled", "no_tables")

_PG_KEYS = (
    ConfigDef()
    .define("database.hostname", ConfigType.STRING, validator=NonEmptyString(), importance=Importance.HIGH)
    .define("database.port", ConfigType.INT, 5432, Range.between(1, 65535), Importance.HIGH)
    .define("database.user", ConfigType.STRING, validator=NonEmptyString(), importance=Importance.HIGH)
    .define("database.password", ConfigType.PASSWORD, None, None, Importance.HIGH)
    .define("database.dbname", ConfigType.STRING, validator=NonEmptyString(), importance=Importance.HIGH)
    .define("database.sslmode", ConfigType.STRING, "prefer", None, Importance.LOW, "libpq sslmode.")
    .define(
        "plugin.name",
        ConfigType.STRING,
        "pgoutput",
        ValidString.in_("pgoutput"),
        Importance.MEDIUM,
        "Logical decoding plugin; only pgoutput (built into PostgreSQL 10+) is supported.",
    )
    .define("slot.name", ConfigType.STRING, "debezium", NonEmptyString(), Importance.MEDIUM)
    .define("slot.drop.on.stop", ConfigType.BOOLEAN, False, None, Importance.LOW, "Drop the slot on stop (tests).")
    .define("publication.name", ConfigType.STRING, "dbz_publication", NonEmptyString(), Importance.MEDIUM)
    .define(
        "publication.autocreate.mode",
        ConfigType.STRING,
        "all_tables",
        ValidString.in_(*AUTOCREATE_MODES),
        Importance.MEDIUM,
    )
    .define("schema.include.list", ConfigType.LIST, None, ValidRegex(), Importance.MEDIUM)
    .define("schema.exclude.list", ConfigType.LIST, None, ValidRegex(), Importance.MEDIUM)
    .define("message.prefix.include.list", ConfigType.LIST, None, ValidRegex(), Importance.LOW)
    .define("message.prefix.exclude.list", ConfigType.LIST, None, ValidRegex(), Importance.LOW)
    .define("snapshot.mode", ConfigType.STRING, "initial", ValidString.in_(*SNAPSHOT_MODES), Importance.MEDIUM)
    .define(
        "replica.identity.autoset.values",
        ConfigType.STRING,
        None,
        ValidAutosetValues(),
        Importance.LOW,
        "Comma-separated <schema.table regex>:<DEFAULT|FULL|NOTHING|INDEX name>; applied with ALTER TABLE at start.",
    )
    .define(
        "unavailable.value.placeholder",
        ConfigType.STRING,
        "__debezium_unavailable_value",
        None,
        Importance.LOW,
        "Stands in for unchanged TOASTed values that pgoutput does not send.",
    )
    .define("interval.handling.mode", ConfigType.STRING, "numeric", ValidString.in_("numeric", "string"))
    .define("hstore.handling.mode", ConfigType.STRING, "json", ValidString.in_("json", "map"))
    .define("money.fraction.digits", ConfigType.SHORT, 2, Range.between(0, 20))
    .define("status.update.interval.ms", ConfigType.INT, 10_000, Range.at_least(0), Importance.LOW)
    .define(
        "stream.in.progress.transactions",
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.LOW,
        "Not a Debezium option. pgoutput proto 2 streaming (PostgreSQL 14+): the server sends transactions larger "
        "than logical_decoding_work_mem before they commit, instead of spilling them itself; the connector keeps "
        "them and emits each at its commit, exactly as without streaming.",
    )
    .define(
        "stream.buffer.memory.bytes",
        ConfigType.LONG,
        64 * 1024 * 1024,
        Range.at_least(0),
        Importance.LOW,
        "With stream.in.progress.transactions: bytes of open streamed transactions kept in memory; past it the "
        "largest moves to a temporary file.",
    )
    .define(
        "time.precision.mode",
        ConfigType.STRING,
        "adaptive",
        ValidString.in_ignore_case("adaptive", "adaptive_time_microseconds", "connect"),
        Importance.MEDIUM,
        "adaptive (PostgreSQL's default) | adaptive_time_microseconds | connect",
    )
)

CONFIG_DEF = define_common(ConfigDef()).merge(_PG_KEYS)


def validate(props: Mapping[str, Any]) -> list:
    return add_cross_field_errors(CONFIG_DEF.validate(props))


@dataclass(frozen=True)
class PostgresConnectorConfig:
    values: dict[str, Any]

    @classmethod
    def parse(cls, props: Mapping[str, Any]) -> PostgresConnectorConfig:
        return cls(CONFIG_DEF.parse(props))

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def dsn(self, replication: bool = False) -> dict[str, Any]:
        password = self.values["database.password"]
        kw: dict[str, Any] = {
            "host": self.values["database.hostname"],
            "port": self.values["database.port"],
            "user": self.values["database.user"],
            "dbname": self.values["database.dbname"],
            "sslmode": self.values["database.sslmode"],
            # Text output must follow the grammar text_values parses, whatever the server default.
            "options": "-c DateStyle=ISO -c IntervalStyle=postgres -c extra_float_digits=3 -c TimeZone=UTC",
        }
        if password is not None:
            kw["password"] = password.value()
        return kw
