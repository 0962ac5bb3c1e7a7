"""Configuration: Debezium's names, spellings and checks; a wrong value names its key, nothing is silently ignored."""

from __future__ import annotations

import pytest

from cdc.api import ConfigException
from cdc_postgres.config import PostgresConnectorConfig, validate

BASE = {
    "database.hostname": "db",
    "database.user": "u",
    "database.dbname": "shop",
    "topic.prefix": "srv",
}


def _errors(props: dict[str, str]) -> dict[str, list[str]]:
    return {v.name: v.errors for v in validate(props) if v.errors}


@pytest.mark.parametrize(
    ("extra", "field", "fragment"),
    [
        ({"slot.name": "Shop-Slot"}, "slot.name", "lower-case letters, digits and underscores"),
        ({"slot.name": "s" * 64}, "slot.name", "at most 63"),
        ({"database.sslmode": "required"}, "database.sslmode", "verify-full"),
        ({"schema.include.list": "a", "schema.exclude.list": "b"}, "schema.exclude.list", "mutually exclusive"),
        (
            {"message.prefix.include.list": "a", "message.prefix.exclude.list": "b"},
            "message.prefix.exclude.list",
            "mutually exclusive",
        ),
        ({"message.key.columns": "public.t(:id"}, "message.key.columns", "not a valid regular expression"),
        ({"column.mask.with.4.chars": "public.t.(ssn"}, "column.mask.with.4.chars", "not a valid regular expression"),
        ({"column.mask.with.four.chars": "public.t.ssn"}, "column.mask.with.four.chars", "not a column mapper"),
        ({"schema.whitelist": "public"}, "schema.whitelist", "renamed to schema.include.list"),
        ({"event.processing.failure.handling.mode": "loud"}, "event.processing.failure.handling.mode", "fail"),
        ({"snapshot.isolation.mode": "snapshot"}, "snapshot.isolation.mode", "repeatable_read"),
        ({"snapshot.locking.mode": "custom"}, "snapshot.locking.mode", "shared"),
    ],
)
def test_invalid_values_name_the_field(extra: dict[str, str], field: str, fragment: str) -> None:
    errors = _errors({**BASE, **extra})
    assert field in errors and fragment in " ".join(errors[field]), errors
    with pytest.raises(ConfigException) as e:
        PostgresConnectorConfig.parse({**BASE, **extra})
    assert e.value.name == field


def test_renamed_server_name_says_what_to_set() -> None:
    props = {k: v for k, v in BASE.items() if k != "topic.prefix"}
    errors = _errors({**props, "database.server.name": "srv"})
    assert "set topic.prefix=srv instead" in " ".join(errors["database.server.name"])


def test_cross_key_rules_hold_when_parsed_directly() -> None:
    with pytest.raises(ConfigException) as e:
        PostgresConnectorConfig.parse({**BASE, "max.batch.size": "100", "max.queue.size": "100"})
    assert e.value.name == "max.queue.size"


def test_enums_accept_debezium_spellings() -> None:
    c = PostgresConnectorConfig.parse(
        {
            **BASE,
            "snapshot.mode": "INITIAL_ONLY",
            "publication.autocreate.mode": "Filtered",
            "plugin.name": "PGOUTPUT",
            "interval.handling.mode": "STRING",
        }
    )
    assert (c["snapshot.mode"], c["publication.autocreate.mode"], c["plugin.name"], c["interval.handling.mode"]) == (
        "initial_only", "filtered", "pgoutput", "string"
    )  # fmt: skip
    assert PostgresConnectorConfig.parse({**BASE, "snapshot.mode": "never"})["snapshot.mode"] == "no_data"


def test_connect_errors_point_at_the_key() -> None:
    from cdc_postgres.connection import connect_advice

    assert "database.dbname" in connect_advice('FATAL:  database "nosuch" does not exist')
    assert "database.user" in connect_advice('FATAL:  role "nosuch" does not exist')
    assert "database.password" in connect_advice('FATAL:  password authentication failed for user "u"')


def test_snapshot_isolation_and_locking_modes(caplog: pytest.LogCaptureFixture) -> None:
    c = PostgresConnectorConfig.parse(BASE)
    assert (c["snapshot.isolation.mode"], c["snapshot.locking.mode"]) == ("serializable", "shared")
    c = PostgresConnectorConfig.parse(
        {**BASE, "snapshot.isolation.mode": "READ_COMMITTED", "snapshot.locking.mode": "NONE"}
    )
    assert (c["snapshot.isolation.mode"], c["snapshot.locking.mode"]) == ("read_committed", "none")
    assert "REPEATABLE READ" in caplog.text  # the weaker level is not what runs: said, not silent


def test_event_processing_failure_mode_is_implemented_not_treated_as_fail(caplog: pytest.LogCaptureFixture) -> None:
    config = PostgresConnectorConfig.parse({**BASE, "event.processing.failure.handling.mode": "WARN"})
    assert config["event.processing.failure.handling.mode"] == "warn"
    assert "treated as fail" not in caplog.text
