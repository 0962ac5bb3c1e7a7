"""A column added in the same transaction as a row: its schema must not depend on when the catalog is read.

Debezium's RecordsStreamProducerIT (the mandatory_text_array tests): one transaction adds
`mandatory_text_array TEXT[] NOT NULL` (or `varchar(20000)[]`), sets its storage to EXTENDED and
inserts a row; the insert's `after.mandatory_text_array` is a required array. pgoutput decodes a
transaction once its commit record is flushed, a moment before the transaction is visible to other
sessions, so a catalog read right at its Relation message could miss the new column (and take it as
nullable). This test repeats that transaction many times, with random column types, NOT NULL or not,
defaults, and DDL + inserts on other captured tables running meanwhile, and checks every event's schema.
Set CDC_TEST_SEED to replay a failing run (the seed is printed).
"""

from __future__ import annotations

import os
import random
import threading
import time
from dataclasses import dataclass
from typing import Any

import pytest

from cdc.api import Schema, SourceRecord
from tests.postgres.harness import TaskRunner, connector_props
from tests.rig import postgres as postgres_rig

ITERATIONS = 60
NOISE_TABLES = 3
FIXED_WIDTH = frozenset({"int4", "bool"})
BIG = "t" * 10_000  # TOASTed, as Debezium's toastedValue


@dataclass(frozen=True)
class ColumnCase:
    sql_type: str
    literal: str  # the inserted value
    value: Any  # its value in the event
    default: tuple[str, Any] | None = None  # (DEFAULT expression, the schema's default) when one applies


# (type, value, optional default): the arrays of Debezium's test and scalar types with mappable defaults.
CASES = [
    ColumnCase("TEXT[]", f"ARRAY['{BIG}']", [BIG]),
    ColumnCase("varchar(20000)[]", f"ARRAY['{BIG}']", [BIG]),
    ColumnCase("int4[]", "ARRAY[1,2]", [1, 2]),
    ColumnCase("test_type[]", "ARRAY['V2']::test_type[]", ["V2"]),
    ColumnCase("int4", "42", 42, ("7", 7)),
    ColumnCase("text", f"'{BIG}'", BIG, ("'d'", "d")),
    ColumnCase("varchar(20)", "'v'", "v", ("'w'::character varying", "w")),
    ColumnCase("bool", "true", True, ("false", False)),
]


@dataclass(frozen=True)
class Step:
    table: str
    case: ColumnCase
    not_null: bool
    with_default: bool


def _plan(rng: random.Random) -> list[Step]:
    steps = []
    for i in range(ITERATIONS):
        case = rng.choice(CASES)
        with_default = case.default is not None and rng.random() < 0.5
        steps.append(Step(f"main_{i}", case, rng.random() < 0.7, with_default))
    return steps


def _ddl_and_insert(db: Any, step: Step) -> None:
    """Debezium's transaction: ADD COLUMN, SET STORAGE EXTENDED, INSERT, committed together."""
    column = f"mandatory_text_array {step.case.sql_type}"
    if step.with_default:
        assert step.case.default is not None
        column += f" DEFAULT {step.case.default[0]}"
    if step.not_null:
        column += " NOT NULL"
    with db.connect(autocommit=False) as tx:
        tx.execute(f"ALTER TABLE {step.table} ADD COLUMN {column}")
        if step.case.sql_type not in FIXED_WIDTH:  # only a variable-length type can be TOASTed
            tx.execute(f"ALTER TABLE {step.table} ALTER COLUMN mandatory_text_array SET STORAGE EXTENDED")
        tx.execute(
            f"INSERT INTO {step.table} (not_toast, text, mandatory_text_array) VALUES (10, 'text', {step.case.literal})"
        )
        tx.commit()


def _noise(db: Any, stop: threading.Event, seed: int, done: list[int]) -> None:
    """DDL on other captured tables, each with a row in the same transaction: column n<j> NOT NULL DEFAULT j."""
    rng = random.Random(seed + 1)
    j = 0
    with db.connect(autocommit=False) as conn:
        while not stop.is_set():
            table = f"noise_{rng.randrange(NOISE_TABLES)}"
            conn.execute(f"ALTER TABLE {table} ADD COLUMN n{j} int NOT NULL DEFAULT {j}")
            conn.execute(f"INSERT INTO {table} (tag) VALUES ({j})")
            conn.commit()
            done.append(j)
            j += 1


def _after(record: SourceRecord) -> Any:
    return record.value.get("after")


def test_columns_added_with_the_row_keep_their_nullability(postgres_db: Any) -> None:
    seed = int(os.environ.get("CDC_TEST_SEED") or random.SystemRandom().randrange(2**32))
    print(f"CDC_TEST_SEED={seed}")
    why = f" (replay with CDC_TEST_SEED={seed})"
    steps = _plan(random.Random(seed))
    sql = postgres_db.connect()
    sql.execute("CREATE TYPE test_type AS ENUM ('V1','V2')")
    for step in steps:
        sql.execute(f"CREATE TABLE {step.table} (id serial PRIMARY KEY, text text, not_toast int)")
    for k in range(NOISE_TABLES):
        sql.execute(f"CREATE TABLE noise_{k} (id serial PRIMARY KEY, tag int NOT NULL)")
    props = connector_props(postgres_db, **{"table.include.list": "public.main_.*,public.noise_.*"})
    props["snapshot.mode"] = "no_data"
    stop = threading.Event()
    noise_done: list[int] = []
    with TaskRunner(props) as runner:
        runner.wait_streaming(sql)
        noise = threading.Thread(target=_noise, args=(postgres_db, stop, seed, noise_done), daemon=True)
        noise.start()
        try:
            for step in steps:
                _ddl_and_insert(postgres_db, step)
                # A second, plain insert: its schema is read long after the DDL committed.
                sql.execute(
                    f"INSERT INTO {step.table} (not_toast, text, mandatory_text_array) "
                    f"VALUES (11, 'next', {step.case.literal})"
                )
        finally:
            stop.set()
            noise.join(30)
        runner.wait_data(2 * len(steps) + len(noise_done), timeout=120)
        records = runner.data()

    by_topic: dict[str, list[SourceRecord]] = {}
    for r in records:
        by_topic.setdefault(r.topic.split(".")[-1], []).append(r)
    for step in steps:
        events = by_topic.get(step.table, [])
        assert len(events) == 2, f"{step.table}: {len(events)} events{why}"
        first, second = (_after(e) for e in events)
        field = first.schema.field("mandatory_text_array")
        assert field is not None, f"{step}: column missing from the first event's schema{why}"
        schema: Schema = field.schema
        assert schema.optional is not step.not_null, f"{step}: optional={schema.optional}{why}"
        expected_default = step.case.default[1] if step.with_default and step.case.default else None
        assert schema.default_value == expected_default, f"{step}: default {schema.default_value!r}{why}"
        if schema.value_schema is not None:  # items: optional for int4[]/text[], required for an enum's
            assert schema.value_schema.optional is (step.case.sql_type != "test_type[]"), f"{step}{why}"
        # The event written with the DDL and the one after it carry the same schema.
        assert first.schema == second.schema, f"{step}: the two events' schemas differ{why}"
        assert first.get("mandatory_text_array") == step.case.value, f"{step}{why}"
    noise_events = [e for k in range(NOISE_TABLES) for e in by_topic.get(f"noise_{k}", [])]
    assert len(noise_events) == len(noise_done) > 0, why
    for event in noise_events:
        after = _after(event)
        tag = after.get("tag")
        field = after.schema.field(f"n{tag}")
        assert field is not None, f"noise column n{tag} missing from its own insert's schema{why}"
        assert not field.schema.optional and field.schema.default_value == tag, f"n{tag}: {field.schema}{why}"


@pytest.mark.integration  # its own server (no session fixture tells the tier)
def test_relation_decoded_before_its_transaction_is_visible() -> None:
    """The race made deterministic: a synchronous standby that never comes holds the committing backend
    after its commit record is flushed (so decoded and sent) and before it becomes visible; the schema
    must still be the one that transaction committed once it is. On a private server: the setting
    holds every commit of the server, and the session's is shared with the other test worker."""
    with postgres_rig.spawn_local() as server:
        _relation_decoded_before_visible(server)


def _relation_decoded_before_visible(postgres_db: Any) -> None:
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE held (id serial PRIMARY KEY, text text)")
    props = connector_props(postgres_db, **{"table.include.list": "public.held", "snapshot.mode": "no_data"})
    with TaskRunner(props) as runner:
        runner.wait_streaming(sql)
        sql.execute("ALTER SYSTEM SET synchronous_standby_names = 'nobody'")
        sql.execute("SELECT pg_reload_conf()")
        tx = postgres_db.connect(autocommit=False)
        try:
            tx.execute("ALTER TABLE held ADD COLUMN mandatory_text_array TEXT[] NOT NULL")
            tx.execute("ALTER TABLE held ALTER COLUMN mandatory_text_array SET STORAGE EXTENDED")
            tx.execute(f"INSERT INTO held (text, mandatory_text_array) VALUES ('text', ARRAY['{BIG}'])")
            committer = threading.Thread(target=tx.commit, daemon=True)
            committer.start()  # flushed and decoded, then waits for the standby
            time.sleep(1.5)  # the walsender sends it meanwhile; the connector gets its Relation message
        finally:
            sql.execute("ALTER SYSTEM RESET synchronous_standby_names")
            sql.execute("SELECT pg_reload_conf()")
        committer.join(30)
        tx.close()
        (record,) = runner.wait_data(1, "public.held")
    field = _after(record).schema.field("mandatory_text_array")
    assert field is not None and not field.schema.optional, field
