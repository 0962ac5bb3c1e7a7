"""`cdc validate` runs the connectors' own checks on the live servers (issue 24).

Each misconfiguration of a real private MariaDB or PostgreSQL (spawned by tests/rig: the
session servers, with a global variable changed at runtime and restored, or a dedicated server
started with the setting) gives one line naming the key and the fix, and exit status 2; a good
job passes. An unreachable Kafka (a closed port) fails within a bound naming bootstrap.servers.
Names, passwords and table names are drawn from a seeded random generator (SEED in the output).
"""

from __future__ import annotations

import random
import string
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cdc.cli.jobs import validate
from tests.jobs.jobfile import mysql_delta_job
from tests.mysql.harness import connector_props as mysql_props
from tests.postgres.harness import connector_props as pg_props
from tests.rig import MariaDbServer, PostgresServer
from tests.rig import mariadb as mariadb_rig
from tests.rig import postgres as postgres_rig
from tests.rig._common import free_port
from tests.support.proc import run_cdc

SEED = random.randrange(2**32)


@pytest.fixture
def rng() -> random.Random:
    print(f"SEED={SEED}")
    return random.Random(SEED)


def _word(rng: random.Random, n: int = 10) -> str:
    return rng.choice(string.ascii_lowercase) + "".join(rng.choices(string.ascii_lowercase + string.digits, k=n - 1))


def run(job: Path, *args: str) -> tuple[int, list[str]]:
    res = CliRunner().invoke(validate, [str(job), *args], catch_exceptions=False)
    return res.exit_code, [line for line in res.output.splitlines() if line.strip()]


def errors(job: Path) -> list[str]:
    code, lines = run(job)
    assert code == 2, lines
    assert all(line.startswith("error: ") and "Traceback" not in line for line in lines), lines
    return lines


def one_error(job: Path) -> str:
    lines = errors(job)
    assert len(lines) == 1, lines
    return lines[0]


# -- MariaDB ----------------------------------------------------------------------------------
@pytest.fixture
def shop(mariadb_db: MariaDbServer) -> MariaDbServer:
    with mariadb_db.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE customers (id INT PRIMARY KEY, name VARCHAR(40))")
        cur.execute("CREATE TABLE orders (id INT PRIMARY KEY, customer INT)")
    return mariadb_db


def _mysql_job(tmp_path: Path, server: MariaDbServer, **extra: str) -> Path:
    props = mysql_props(server, **extra)
    return mysql_delta_job(tmp_path, "shop", props, {f"{server.database}.orders": "keys: [id]"})


def test_good_mysql_job_passes_in_a_subprocess(tmp_path: Path, shop: MariaDbServer) -> None:
    job = _mysql_job(tmp_path, shop)
    res = run_cdc("validate", str(job))
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.strip() == f"{job}: OK"


def test_wrong_password_names_database_password_and_never_prints_it(
    tmp_path: Path, shop: MariaDbServer, rng: random.Random
) -> None:
    wrong = _word(rng, 16)
    job = _mysql_job(tmp_path, shop, database__password=wrong)
    res = run_cdc("validate", str(job))
    out = res.stdout + res.stderr
    assert res.returncode == 2, out
    (line,) = out.strip().splitlines()
    assert "source['database.password']: Cannot connect to" in line and "Access denied for user 'cdc'@" in line
    assert "Check database.password" in line and wrong not in out


@pytest.mark.parametrize(
    ("variable", "bad"),
    [("binlog_format", "STATEMENT"), ("binlog_format", "MIXED"), ("binlog_row_image", "MINIMAL")],
)
def test_binlog_settings_the_connector_cannot_use(tmp_path: Path, shop: MariaDbServer, variable: str, bad: str) -> None:
    with shop.connect() as conn, conn.cursor() as cur:
        cur.execute(f"SELECT @@GLOBAL.{variable}")
        (before,) = cur.fetchone()
        cur.execute(f"SET GLOBAL {variable} = '{bad}'")
        try:
            line = one_error(_mysql_job(tmp_path, shop))
        finally:
            cur.execute(f"SET GLOBAL {variable} = '{before}'")
    assert f"source['database.hostname']: {variable} is {bad} but the connector needs" in line
    assert f"SET GLOBAL {variable} = " in line and "my.cnf" in line


@pytest.fixture(scope="module")
def binlog_off() -> Iterator[MariaDbServer]:
    """A dedicated MariaDB without a binary log (log_bin cannot change at runtime)."""
    with mariadb_rig.spawn_local(["--skip-log-bin"]) as server:
        yield server


@pytest.mark.e2e
def test_binlog_off(tmp_path: Path, binlog_off: MariaDbServer) -> None:
    line = one_error(_mysql_job(tmp_path, binlog_off))
    assert "source['database.hostname']: Binary logging is disabled on the server (log_bin=OFF)" in line
    assert "log-bin=mysql-bin" in line


def _user_with(server: MariaDbServer, rng: random.Random, grants: str) -> tuple[str, str]:
    user, password = _word(rng, 8), _word(rng, 14)
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE USER %s@'%%' IDENTIFIED BY %s", (user, password))
        cur.execute(f"GRANT {grants} ON *.* TO %s@'%%'", (user,))
    return user, password


@pytest.mark.parametrize(
    ("grants", "lacking", "fix"),
    [
        ("SELECT, RELOAD, LOCK TABLES, BINLOG MONITOR", "REPLICATION SLAVE", "GRANT REPLICATION SLAVE"),
        ("SELECT, RELOAD, LOCK TABLES, REPLICATION SLAVE", "REPLICATION CLIENT", "GRANT BINLOG MONITOR"),
        ("SELECT, REPLICATION SLAVE, BINLOG MONITOR", "neither RELOAD nor LOCK TABLES", "GRANT RELOAD"),
    ],
)
def test_missing_grant(
    tmp_path: Path, shop: MariaDbServer, rng: random.Random, grants: str, lacking: str, fix: str
) -> None:
    user, password = _user_with(shop, rng, grants)
    try:
        line = one_error(_mysql_job(tmp_path, shop, database__user=user, database__password=password))
    finally:
        with shop.connect() as conn, conn.cursor() as cur:
            cur.execute("DROP USER %s@'%%'", (user,))
    assert "source['database.user']: " in line and lacking in line and fix in line, line
    assert password not in line


def test_unknown_sink_table_names_it_and_lists_the_captured_ones(
    tmp_path: Path, shop: MariaDbServer, rng: random.Random
) -> None:
    unknown = f"{shop.database}.{_word(rng)}"
    props = mysql_props(shop)
    job = mysql_delta_job(tmp_path, "shop", props, {f"{shop.database}.orders": "keys: [id]", unknown: "keys: [id]"})
    line = one_error(job)
    assert f"sink.tables['{unknown}']: table '{unknown}' is not captured by the source" in line
    assert f"(captured: {shop.database}.customers, {shop.database}.orders)" in line
    assert "table.include.list" in line


def test_unreachable_kafka_fails_within_a_bound_naming_bootstrap_servers(tmp_path: Path, shop: MariaDbServer) -> None:
    job = _mysql_job(tmp_path, shop)
    port = free_port()  # nothing listens there
    job.write_text(
        job.read_text().replace("  type: embedded\n", f"  type: kafka\n  bootstrap.servers: 127.0.0.1:{port}\n")
    )
    start = time.monotonic()
    line = one_error(job)
    assert time.monotonic() - start < 20
    assert f"transport['bootstrap.servers']: cannot reach Kafka at 127.0.0.1:{port}" in line
    assert "check bootstrap.servers" in line


def test_offline_skips_the_live_checks(tmp_path: Path, shop: MariaDbServer, rng: random.Random) -> None:
    job = _mysql_job(tmp_path, shop, database__password=_word(rng, 16))
    code, lines = run(job, "--offline")
    assert code == 0 and lines == [f"{job}: OK"]


# -- PostgreSQL -------------------------------------------------------------------------------
def _pg_job(tmp_path: Path, props: dict[str, str], tables: dict[str, str] | None = None) -> Path:
    source = "\n".join(f"  {k}: '{v}'" for k, v in props.items() if k != "slot.drop.on.stop")
    listed = "\n".join(f"    {t}: {{keys: [id]}}" for t in (tables or {"public.accounts": ""}))
    job = tmp_path / "job.yaml"
    job.write_text(
        f"""name: bank
source:
{source}
transport:
  type: embedded
  state.dir: {tmp_path / "state"}
sink:
  type: delta
  path: {tmp_path / "lake"}
  tables:
{listed}
"""
    )
    return job


@pytest.fixture
def bank(postgres_db: PostgresServer) -> PostgresServer:
    with postgres_db.connect() as conn:
        conn.execute("CREATE TABLE accounts (id int PRIMARY KEY, balance numeric)")
        conn.execute("CREATE TABLE branches (id int PRIMARY KEY)")
    return postgres_db


def test_good_postgres_job_passes(tmp_path: Path, bank: PostgresServer) -> None:
    job = _pg_job(tmp_path, pg_props(bank))
    code, lines = run(job)
    assert code == 0 and lines == [f"{job}: OK"], lines


def test_validate_writes_nothing_in_state_dir_and_creates_no_slot(
    tmp_path: Path, shop: MariaDbServer, bank: PostgresServer
) -> None:
    """Issue 31: `cdc validate` is read-only toward the servers and the job's state: no state.dir,
    no replication slot (and, on MySQL, never the job's server id: test_validate_beside_a_running_job)."""
    with bank.connect() as conn:
        slots = conn.execute("SELECT slot_name FROM pg_replication_slots ORDER BY 1").fetchall()
    (tmp_path / "m").mkdir()
    (tmp_path / "p").mkdir()
    for job in (_mysql_job(tmp_path / "m", shop), _pg_job(tmp_path / "p", pg_props(bank))):
        code, lines = run(job)
        assert code == 0 and lines == [f"{job}: OK"], lines
    assert not (tmp_path / "m" / "state").exists() and not (tmp_path / "p" / "state").exists()
    with bank.connect() as conn:
        assert conn.execute("SELECT slot_name FROM pg_replication_slots ORDER BY 1").fetchall() == slots


def test_postgres_unknown_database_names_database_dbname(
    tmp_path: Path, bank: PostgresServer, rng: random.Random
) -> None:
    name = _word(rng)
    line = one_error(_pg_job(tmp_path, pg_props(bank, **{"database.dbname": name})))
    assert "source['database.dbname']: cannot connect to PostgreSQL" in line
    assert f'database "{name}" does not exist; check database.dbname' in line


def test_postgres_user_without_replication(tmp_path: Path, bank: PostgresServer, rng: random.Random) -> None:
    role = _word(rng)
    with bank.connect() as conn:
        conn.execute(f'CREATE ROLE "{role}" LOGIN')
        conn.execute(f'GRANT SELECT ON ALL TABLES IN SCHEMA public TO "{role}"')
    try:
        line = one_error(_pg_job(tmp_path, pg_props(bank, **{"database.user": role})))
    finally:
        with bank.connect() as conn:
            conn.execute(f'DROP OWNED BY "{role}"; DROP ROLE "{role}"')
    assert f"source['database.user']: user '{role}' lacks the REPLICATION attribute" in line
    assert f'ALTER ROLE "{role}" REPLICATION' in line and "rds_replication" in line


def test_postgres_slot_in_use_by_another_reader(tmp_path: Path, bank: PostgresServer, rng: random.Random) -> None:
    from cdc_postgres.replication import ReplicationConnection

    slot = _word(rng)
    with bank.connect() as conn:
        conn.execute("CREATE PUBLICATION dbz_publication FOR ALL TABLES")
    other = ReplicationConnection(bank.dsn)
    try:
        other.create_slot(slot, export_snapshot=False)
        other.start(slot, ["dbz_publication"])
        line = one_error(_pg_job(tmp_path, pg_props(bank, **{"slot.name": slot})))
    finally:
        other.close()
    assert f"source['slot.name']: replication slot '{slot}' is in use by process" in line
    assert "its own slot.name" in line and "pg_terminate_backend(" in line


def test_postgres_publication_missing_or_short_of_tables_when_autocreate_is_disabled(
    tmp_path: Path, bank: PostgresServer
) -> None:
    props = pg_props(bank, **{"publication.autocreate.mode": "disabled"})
    line = one_error(_pg_job(tmp_path, props))
    assert "source['publication.autocreate.mode']: publication 'dbz_publication' does not exist" in line
    assert "CREATE PUBLICATION" in line
    with bank.connect() as conn:
        conn.execute("CREATE PUBLICATION dbz_publication FOR TABLE accounts")
    line = one_error(_pg_job(tmp_path, props))
    assert "publication 'dbz_publication' does not carry the captured table(s) public.branches" in line
    assert 'ALTER PUBLICATION "dbz_publication" ADD TABLE public.branches' in line
    props["table.include.list"] = "public.accounts"
    code, lines = run(_pg_job(tmp_path, props))
    assert code == 0, lines


def test_postgres_unknown_sink_table(tmp_path: Path, bank: PostgresServer, rng: random.Random) -> None:
    unknown = f"public.{_word(rng)}"
    line = one_error(_pg_job(tmp_path, pg_props(bank), {"public.accounts": "", unknown: ""}))
    assert f"sink.tables['{unknown}']: table '{unknown}' is not captured by the source" in line
    assert "(captured: public.accounts, public.branches)" in line


@pytest.fixture(scope="module")
def pg_replica_level() -> Iterator[Any]:
    """A dedicated PostgreSQL with wal_level=replica and one replication slot, taken (a physical one)."""
    with postgres_rig.spawn_local({"wal_level": "replica", "max_replication_slots": "1"}) as server:
        with server.connect() as conn:
            conn.execute("SELECT pg_create_physical_replication_slot('standby')")
            conn.execute("CREATE TABLE accounts (id int PRIMARY KEY)")
        yield server


@pytest.mark.e2e
def test_postgres_wal_level_and_no_free_slot(tmp_path: Path, pg_replica_level: PostgresServer) -> None:
    lines = errors(_pg_job(tmp_path, pg_props(pg_replica_level)))
    assert len(lines) == 2, lines
    wal, slots = lines
    assert "source['database.hostname']: wal_level is 'replica', but logical decoding needs 'logical'" in wal
    assert "ALTER SYSTEM SET wal_level = logical" in wal
    assert "source['slot.name']: replication slot" in slots and "max_replication_slots=1" in slots
    assert "pg_drop_replication_slot" in slots


@pytest.mark.e2e
def test_help_says_what_is_checked() -> None:
    res = run_cdc("validate", "--help")
    assert res.returncode == 0
    text = " ".join(res.stdout.split())
    for check in ("binlog_format=ROW", "REPLICATION SLAVE", "wal_level=logical", "max_replication_slots"):
        assert check in text, check
    assert "sink.tables entry is a table the source captures" in text and "bootstrap.servers" in text
