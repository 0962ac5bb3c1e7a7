"""PostgresConnectorConfig: Debezium's PostgreSQL connector keys, on top of the shared ones."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cdc.api import (
    ConfigDef,
    ConfigException,
    ConfigType,
    ConfigValue,
    Importance,
    NonEmptyString,
    Range,
    ValidRegex,
    ValidString,
)
from cdc_debezium.config import (
    EVENT_PROCESSING_FAILURE,
    add_cross_field_errors,
    define_common,
    define_failure_modes,
    warn_unless_fail,
)
from cdc_debezium.key_columns import KeyColumns
from cdc_postgres import debezium_keys, tls
from cdc_postgres.replica_identity import ValidAutosetValues
from cdc_postgres.reselect import ERROR_MODES, SCOPES

log = logging.getLogger(__name__)

SNAPSHOT_MODES = ("initial", "initial_only", "no_data", "when_needed", "always")
AUTOCREATE_MODES = ("all_tables", "filtered", "disabled", "no_tables")
ISOLATION_MODES = ("serializable", "repeatable_read", "read_committed", "read_uncommitted")
LOCKING_MODES = ("shared", "none")
SSL_MODES = tls.SSL_MODES
FAILURE_KEYS = (EVENT_PROCESSING_FAILURE, "inconsistent.schema.handling.mode")
# Enum keys Debezium parses case-insensitively; parse() hands the task their lower-case form.
_LOWER_CASE_KEYS = (
    "snapshot.mode",
    "plugin.name",
    "publication.autocreate.mode",
    "interval.handling.mode",
    "hstore.handling.mode",
    "database.sslmode",
    "snapshot.isolation.mode",
    "snapshot.locking.mode",
    "reselect.scope",
    "reselect.error.handling.mode",
    *FAILURE_KEYS,
)
# Earlier Debezium names of snapshot modes, mapped to today's.
_MODE_ALIASES = {"never": "no_data", "exported": "initial"}
_RENAMED = {
    "database.server.name": "topic.prefix",
    "schema.whitelist": "schema.include.list",
    "schema.blacklist": "schema.exclude.list",
    "table.whitelist": "table.include.list",
    "table.blacklist": "table.exclude.list",
    "column.whitelist": "column.include.list",
    "column.blacklist": "column.exclude.list",
}
_EXCLUSIVE = (
    ("schema.include.list", "schema.exclude.list"),
    ("message.prefix.include.list", "message.prefix.exclude.list"),
    ("reselect.columns.include.list", "reselect.columns.exclude.list"),
)
# Debezium's re-select post processor; its options are this connector's reselect.* keys.
RESELECT_PROCESSOR = "io.debezium.processors.reselect.ReselectColumnsPostProcessor"
RESELECT_KEYS = (
    "reselect.columns.include.list",
    "reselect.columns.exclude.list",
    "reselect.unavailable.values",
    "reselect.null.values",
    "reselect.use.event.key",
    "reselect.error.handling.mode",
)
# The post processor's defaults where they differ from the connector's: it re-selects for every
# event, nulls included, and only warns when it cannot.
_PROCESSOR_DEFAULTS = {"reselect.scope": "all", "reselect.null.values": "true", "reselect.error.handling.mode": "warn"}
_SLOT_NAME = re.compile(r"[a-z0-9_]{1,63}")


def _slot_name(name: str, value: Any) -> None:
    """PostgreSQL's own rule for slot names (and Debezium's check of slot.name)."""
    if value is None or not _SLOT_NAME.fullmatch(str(value)):
        raise ConfigException(
            f"Invalid value {value} for configuration {name}: a replication slot name may contain only lower-case "
            "letters, digits and underscores, at most 63 characters (e.g. debezium_shop)",
            name,
            value,
        )


_PG_KEYS = (
    ConfigDef()
    .define("database.hostname", ConfigType.STRING, validator=NonEmptyString(), importance=Importance.HIGH)
    .define("database.port", ConfigType.INT, 5432, Range.between(1, 65535), Importance.HIGH)
    .define("database.user", ConfigType.STRING, validator=NonEmptyString(), importance=Importance.HIGH)
    .define("database.password", ConfigType.PASSWORD, None, None, Importance.HIGH)
    .define("database.dbname", ConfigType.STRING, validator=NonEmptyString(), importance=Importance.HIGH)
    .define(
        "plugin.name",
        ConfigType.STRING,
        "pgoutput",
        ValidString.in_ignore_case("pgoutput"),
        Importance.MEDIUM,
        "Logical decoding plugin; only pgoutput (built into PostgreSQL 10+) is supported.",
    )
    .define("slot.name", ConfigType.STRING, "debezium", _slot_name, Importance.MEDIUM)
    .define(
        "slot.max.retries",
        ConfigType.INT,
        6,
        Range.at_least(0),
        Importance.LOW,
        "How often to retry when the slot is active for another connection.",
    )
    .define(
        "slot.retry.delay.ms", ConfigType.LONG, 10_000, Range.at_least(0), Importance.LOW, "Delay of those retries."
    )
    .define("slot.drop.on.stop", ConfigType.BOOLEAN, False, None, Importance.LOW, "Drop the slot on stop (tests).")
    .define("publication.name", ConfigType.STRING, "dbz_publication", NonEmptyString(), Importance.MEDIUM)
    .define(
        "publication.autocreate.mode",
        ConfigType.STRING,
        "all_tables",
        ValidString.in_ignore_case(*AUTOCREATE_MODES),
        Importance.MEDIUM,
    )
    .define("schema.include.list", ConfigType.LIST, None, ValidRegex(), Importance.MEDIUM)
    .define("schema.exclude.list", ConfigType.LIST, None, ValidRegex(), Importance.MEDIUM)
    .define("message.prefix.include.list", ConfigType.LIST, None, ValidRegex(), Importance.LOW)
    .define("message.prefix.exclude.list", ConfigType.LIST, None, ValidRegex(), Importance.LOW)
    .define(
        "snapshot.mode",
        ConfigType.STRING,
        "initial",
        ValidString.in_ignore_case(*SNAPSHOT_MODES, *_MODE_ALIASES, "custom", "configuration_based"),
        Importance.MEDIUM,
        "When to snapshot: " + ", ".join(SNAPSHOT_MODES),
    )
    .define(
        "snapshot.isolation.mode",
        ConfigType.STRING,
        "serializable",
        ValidString.in_ignore_case(*ISOLATION_MODES),
        Importance.LOW,
        "Debezium's isolation of the snapshot transaction. The snapshot reads the replication slot's exported "
        "snapshot under REPEATABLE READ (READ COMMITTED cannot hold an imported snapshot, and SERIALIZABLE cannot "
        "import one a non-serializable transaction exported): every value reads that one consistent snapshot "
        "(read_committed and read_uncommitted get the stronger isolation, with a warning).",
    )
    .define(
        "snapshot.locking.mode",
        ConfigType.STRING,
        "shared",
        ValidString.in_ignore_case(*LOCKING_MODES),
        Importance.LOW,
        "shared: ACCESS SHARE locks on the captured tables while their structure is read (DDL waits, writes do "
        "not); none: no locks.",
    )
    .define(
        "snapshot.lock.timeout.ms",
        ConfigType.LONG,
        10_000,
        Range.at_least(0),
        Importance.LOW,
        "How long the snapshot waits for its table locks before failing.",
    )
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
    .define(
        "reselect.unavailable.values",
        ConfigType.BOOLEAN,
        True,
        None,
        Importance.MEDIUM,
        "Re-select the values pgoutput did not send (unchanged TOASTed columns) from the table, by the row's key, "
        "in the events reselect.scope names, instead of sending unavailable.value.placeholder. Debezium does this "
        "only with its ReselectColumnsPostProcessor configured.",
    )
    .define(
        "reselect.scope",
        ConfigType.STRING,
        "key_changes",
        ValidString.in_ignore_case(*SCOPES),
        Importance.MEDIUM,
        "Not a Debezium option. key_changes: only the create of a primary-key change (an UPDATE of the key under "
        "REPLICA IDENTITY DEFAULT or INDEX), whose values no target holds; all: every create and update that "
        "lacks a value, as Debezium's ReselectColumnsPostProcessor (one SELECT per such event).",
    )
    .define(
        "post.processors",
        ConfigType.LIST,
        "",
        None,
        Importance.LOW,
        "Debezium's post processors, each configured under <name>.*: only "
        "io.debezium.processors.reselect.ReselectColumnsPostProcessor, which maps to the reselect.* keys.",
    )
    .define(
        "reselect.null.values",
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.LOW,
        "Also re-select columns that are null in those events (the post processor's default is true).",
    )
    .define(
        "reselect.columns.include.list",
        ConfigType.LIST,
        None,
        ValidRegex(),
        Importance.LOW,
        "Regexes of <schema>.<table>:<column> to re-select (default: every column).",
    )
    .define(
        "reselect.columns.exclude.list",
        ConfigType.LIST,
        None,
        ValidRegex(),
        Importance.LOW,
        "Regexes of <schema>.<table>:<column> never to re-select.",
    )
    .define(
        "reselect.use.event.key",
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.LOW,
        "Find the row by the message key (message.key.columns) instead of the primary key; a table without a "
        "primary key always uses the message key.",
    )
    .define(
        "reselect.error.handling.mode",
        ConfigType.STRING,
        "fail",
        ValidString.in_ignore_case(*ERROR_MODES),
        Importance.LOW,
        "fail: a value that cannot be re-selected (no privilege, an ambiguous key) stops the task with the fix; "
        "warn: log it and send the placeholder (the post processor's default). A row that no longer exists is "
        "not an error: the change that removed it follows.",
    )
    .define("interval.handling.mode", ConfigType.STRING, "numeric", ValidString.in_ignore_case("numeric", "string"))
    .define("hstore.handling.mode", ConfigType.STRING, "json", ValidString.in_ignore_case("json", "map"))
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

define_failure_modes(_PG_KEYS, FAILURE_KEYS)
tls.define(_PG_KEYS)  # database.sslmode, sslrootcert, sslcert, sslkey, sslpassword

# Every other key of Debezium's PostgreSQL connector: implemented there, or accepted with a warning.
CONFIG_DEF = debezium_keys.define(define_common(ConfigDef()).merge(_PG_KEYS))


def with_post_processors(props: Mapping[str, Any]) -> tuple[dict[str, Any], list[ConfigValue]]:
    """Debezium's `post.processors` form of the re-select options, as this connector's reselect.* keys.

    Debezium configures ReselectColumnsPostProcessor as `post.processors=<name>`,
    `<name>.type=io.debezium.processors.reselect.ReselectColumnsPostProcessor` and `<name>.reselect.*`;
    here it is built in. Such a configuration gets the post processor's behaviour (every event, nulls
    too, warn). Other post processor types are refused rather than ignored.
    """
    names = [n.strip() for n in str(props.get("post.processors") or "").split(",") if n.strip()]
    out = dict(props)
    errors: list[str] = []
    for name in names:
        kind = props.get(f"{name}.type")
        if kind != RESELECT_PROCESSOR:
            errors.append(
                f"post processor {name!r} has {name}.type={kind}, which the PostgreSQL connector does not support "
                f"(only {RESELECT_PROCESSOR}, which is built in); remove it from post.processors"
            )
            continue
        for key in (*RESELECT_KEYS, *_PROCESSOR_DEFAULTS):
            given = props.get(f"{name}.{key}", _PROCESSOR_DEFAULTS.get(key))
            if given is None:
                continue
            if key in props and str(props[key]).strip().lower() != str(given).strip().lower():
                if f"{name}.{key}" in props:
                    errors.append(f"{key}={props[key]} and {name}.{key}={given} disagree: set only one of them")
                continue  # the connector's own key wins over the post processor's default
            out[key] = given
    problems = []
    for message in errors:
        cv = ConfigValue("post.processors", props.get("post.processors"))
        cv.add_error_message(message)
        problems.append(cv)
    return out, problems


def validate(props: Mapping[str, Any]) -> list[ConfigValue]:
    """Per-key results plus the cross-key rules; renamed Debezium 1.x keys are errors that name the new key."""
    props, post_processor_errors = with_post_processors(props)
    values = add_cross_field_errors(CONFIG_DEF.validate(props))
    by_name = {v.name: v for v in values}
    for inc, exc in _EXCLUSIVE:
        if props.get(inc) and props.get(exc):
            by_name[exc].add_error_message(f"{inc} and {exc} are mutually exclusive: set only one of them")
    key_columns = by_name["message.key.columns"]
    if not key_columns.errors:
        try:
            KeyColumns.parse(props.get("message.key.columns"))
        except ConfigException as e:
            key_columns.add_error_message(str(e))
    return [*values, *_extra_key_errors(props), *post_processor_errors, *debezium_keys.dynamic_keys(props)]


def _extra_key_errors(props: Mapping[str, Any]) -> list[ConfigValue]:
    """Keys Debezium knows that this connector must refuse rather than ignore."""
    out = []
    for name, value in props.items():
        if name in _RENAMED and _RENAMED[name] not in props:
            message = f"{name} was renamed to {_RENAMED[name]} in Debezium 2.0; set {_RENAMED[name]}={value} instead"
        elif name.startswith(("column.mask.", "column.truncate.")) and not debezium_keys.is_mapper_key(name):
            # Ignoring a masking rule would publish the very values it was meant to hide.
            message = (
                f"{name} is not a column mapper Debezium knows (column.mask.with.<n>.chars, "
                "column.mask.hash[.v2].<algorithm>.with.salt.<salt>, column.truncate.to.<n>.chars), so the columns "
                "would be emitted as they are; fix the key or leave the columns out with column.exclude.list"
            )
        else:
            continue
        cv = ConfigValue(name, value)
        cv.add_error_message(message)
        out.append(cv)
    return out


@dataclass(frozen=True)
class PostgresConnectorConfig:
    values: dict[str, Any]

    @classmethod
    def parse(cls, props: Mapping[str, Any]) -> PostgresConnectorConfig:
        """Checked values (the first problem raises, naming its key), enums in lower case, aliases mapped."""
        for v in validate(props):
            if v.errors:
                raise ConfigException(v.errors[0], v.name, v.value)
        values = CONFIG_DEF.parse(with_post_processors(props)[0])
        for key in _LOWER_CASE_KEYS:
            values[key] = values[key].lower()
        mode = debezium_keys.snapshot_mode_alias(values["snapshot.mode"])
        values["snapshot.mode"] = _MODE_ALIASES.get(mode, mode)
        if values["snapshot.isolation.mode"] in ("read_committed", "read_uncommitted"):
            log.warning(
                "snapshot.isolation.mode=%s: the snapshot reads the replication slot's exported snapshot under "
                "REPEATABLE READ (READ COMMITTED would drop it at the first statement), so it is consistent with where "
                "streaming starts",
                values["snapshot.isolation.mode"],
            )
        warn_unless_fail(values.__getitem__, [k for k in FAILURE_KEYS if k != EVENT_PROCESSING_FAILURE])
        debezium_keys.warn_unsupported(props)
        if props.get(tls.SSLFACTORY):
            log.warning(tls.SSLFACTORY_IGNORED, tls.SSLFACTORY, props.get(tls.SSLFACTORY))
        return cls(values)

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def dsn(self, replication: bool = False) -> dict[str, Any]:
        password = self.values["database.password"]
        kw: dict[str, Any] = {
            "host": self.values["database.hostname"],
            "port": self.values["database.port"],
            "user": self.values["database.user"],
            "dbname": self.values["database.dbname"],
            # Text output must follow the grammar text_values parses, whatever the server default.
            "options": "-c DateStyle=ISO -c IntervalStyle=postgres -c extra_float_digits=3 -c TimeZone=UTC",
        }
        if password is not None:
            kw["password"] = password.value()
        # sslmode, sslrootcert, sslcert, sslkey, sslpassword: every connection, the replication one too
        kw.update(tls.libpq_params(self.values))
        return kw
