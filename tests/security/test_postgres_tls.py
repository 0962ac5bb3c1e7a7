"""PostgreSQL over TLS (issue 17): Debezium's `database.sslmode`, `database.sslrootcert`,
`database.sslcert`, `database.sslkey`, `database.sslpassword`, and the warehouse target's libpq keys.

A private PostgreSQL accepts TCP connections only over TLS (hostssl lines, no host lines), and
its `cdc` user only with a client certificate (`cert` authentication). The connector (its normal
and its replication connection), `cdc run`, `cdc verify`, `cdc validate` and the Spark sink's
PostgreSQL writer reach it with verify-full; a wrong CA and `disable` are refused in one line.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc.api import ConfigType, libpq_tls
from cdc.jobs.run import sink_config
from cdc.jobs.spec import JobSpec
from cdc_postgres import tls
from cdc_postgres.config import CONFIG_DEF, PostgresConnectorConfig
from cdc_postgres.connection import PostgresConnection, PostgresConnectorError
from cdc_postgres.replication import ReplicationConnection, ReplicationError
from cdc_spark.apply.config import SinkConfig
from cdc_spark.apply.errors import SinkConfigError
from cdc_spark.apply.postgres import PostgresWriter
from tests.rig import PostgresServer
from tests.rig import postgres as postgres_rig
from tests.rig.tls import Pki, make_pki
from tests.support.examples import examples
from tests.support.proc import run_cdc

SEED = random.randrange(2**32)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"), client_cn="cdc")


@pytest.fixture(scope="module")
def tls_postgres(pki: Pki) -> Iterator[PostgresServer]:
    with postgres_rig.spawn_tls(pki, user="cdc") as server:
        yield server


@pytest.fixture
def tls_db(tls_postgres: PostgresServer) -> Iterator[PostgresServer]:
    with tls_postgres.fresh_database() as server:
        yield server


def _tls(pki: Pki, mode: str = "verify-full", ca: Path | None = None, prefix: str = "database.") -> dict[str, str]:
    return {
        f"{prefix}sslmode": mode,
        f"{prefix}sslrootcert": str(ca or pki.ca_cert),
        f"{prefix}sslcert": str(pki.client_cert),
        f"{prefix}sslkey": str(pki.client_key),
    }


def _props(server: PostgresServer, **extra: str) -> dict[str, str]:
    return {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "database.hostname": server.host,
        "database.port": str(server.port),
        "database.user": "cdc",
        "database.dbname": server.dbname,
        "topic.prefix": "tls",
        **extra,
    }


# -- configuration, without a server -----------------------------------------------------------------
def test_debeziums_keys_are_declared_and_the_key_password_is_a_secret() -> None:
    keys = CONFIG_DEF.config_keys
    for name in (tls.SSLMODE, tls.SSLROOTCERT, tls.SSLCERT, tls.SSLKEY, tls.SSLPASSWORD):
        assert name in keys, name
    assert keys[tls.SSLPASSWORD].type == ConfigType.PASSWORD
    assert keys[tls.SSLMODE].default_value == "prefer"


@settings(max_examples=examples(50), deadline=None)
@given(
    mode=st.sampled_from(libpq_tls.SSL_MODES),
    upper=st.booleans(),
    chosen=st.sets(st.sampled_from(["sslrootcert", "sslcert", "sslkey", "sslpassword"])),
    path=st.text(st.characters(min_codepoint=33, max_codepoint=126, exclude_characters="'\\"), min_size=1, max_size=20),
)
def test_every_connection_of_the_connector_gets_the_libpq_parameters(
    mode: str, upper: bool, chosen: set[str], path: str
) -> None:
    props = {
        "database.hostname": "db",
        "database.user": "u",
        "database.dbname": "d",
        "topic.prefix": "t",
        "database.sslmode": mode.upper() if upper else mode,
        **{f"database.{p}": f"/{p}/{path}" for p in chosen},
    }
    dsn = PostgresConnectorConfig.parse(props).dsn()
    assert dsn["sslmode"] == mode
    assert {p: dsn[p] for p in chosen} == {p: f"/{p}/{path}" for p in chosen}
    assert not ({"sslrootcert", "sslcert", "sslkey", "sslpassword"} - chosen) & set(dsn)


def test_an_unknown_sslmode_names_the_key_and_sslfactory_is_ignored_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    base = {"database.hostname": "db", "database.user": "u", "database.dbname": "d", "topic.prefix": "t"}
    with pytest.raises(Exception) as e:
        PostgresConnectorConfig.parse({**base, "database.sslmode": "verify_full"})
    assert "database.sslmode" in str(e.value)
    with caplog.at_level(logging.WARNING):
        dsn = PostgresConnectorConfig.parse(
            {**base, "database.sslfactory": "org.postgresql.ssl.NonValidatingFactory"}
        ).dsn()
    assert "sslfactory" not in dsn and "database.sslfactory=org.postgresql.ssl.NonValidatingFactory" in caplog.text


@pytest.mark.parametrize(
    ("message", "names"),
    [
        ('connection to server at "h", port 1 failed: SSL error: certificate verify failed', "sslrootcert"),
        ('server certificate for "localhost" does not match host name "db"', "sslmode=verify-ca"),
        ('root certificate file "/root/.postgresql/root.crt" does not exist', "sslrootcert"),
        (
            'FATAL:  no pg_hba.conf entry for host "1.2.3.4", user "u", database "d", no encryption',
            "sslmode to require",
        ),
        ("FATAL:  connection requires a valid client certificate", "sslcert and {p}sslkey"),
        ('could not load private key file "/k.pem": bad decrypt', "sslpassword"),
        ('private key file "/k.pem" has group or world access', "sslkey must be private"),
    ],
)
@pytest.mark.parametrize("prefix", ["database.", "sink.", ""])
def test_libpq_tls_refusals_name_the_key_under_its_prefix(message: str, names: str, prefix: str) -> None:
    fix = libpq_tls.advice(message, prefix)
    assert fix is not None and prefix + names.format(p=prefix) in fix
    assert libpq_tls.advice('FATAL:  password authentication failed for user "u"', prefix) is None


# -- against a PostgreSQL that takes only TLS and client certificates -----------------------------------
def test_the_connector_and_its_replication_connection_use_verify_full(tls_db: PostgresServer, pki: Pki) -> None:
    encrypted = pki.client_key_encrypted("key-pw")
    props = _props(tls_db, **{**_tls(pki), "database.sslkey": str(encrypted), "database.sslpassword": "key-pw"})
    dsn = PostgresConnectorConfig.parse(props).dsn()
    conn = PostgresConnection(dsn)
    try:
        row = conn.execute("SELECT ssl, current_user FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) "
                           "WHERE pid = pg_backend_pid()").fetchone()  # fmt: skip
        assert row == (True, "cdc")
    finally:
        conn.close()
    with ReplicationConnection(dsn) as rc:
        slot = rc.create_slot(f"tls_{random.Random(SEED).randrange(10**6)}", export_snapshot=False)
        assert slot.consistent_point > 0


def test_a_wrong_ca_is_refused_in_one_line_on_both_connections(tls_db: PostgresServer, pki: Pki) -> None:
    dsn = PostgresConnectorConfig.parse(_props(tls_db, **_tls(pki, ca=pki.other_ca_cert))).dsn()
    with pytest.raises(PostgresConnectorError) as e:
        PostgresConnection(dsn)
    message = str(e.value)
    assert "\n" not in message and "certificate verify failed" in message
    assert "point database.sslrootcert at the CA certificate that issued the server's certificate" in message
    with pytest.raises(ReplicationError) as e:
        ReplicationConnection(dsn)
    assert "point database.sslrootcert at the CA" in str(e.value) and "\n" not in str(e.value)


def test_disable_against_a_tls_only_server_fails_clearly(tls_db: PostgresServer, pki: Pki) -> None:
    dsn = PostgresConnectorConfig.parse(_props(tls_db, **_tls(pki, mode="disable"))).dsn()
    with pytest.raises(PostgresConnectorError) as e:
        PostgresConnection(dsn)
    message = str(e.value)
    assert "no encryption" in message and "\n" not in message
    assert (
        "only over TLS (hostssl in pg_hba.conf): set database.sslmode to require, verify-ca or verify-full" in message
    )


@pytest.mark.e2e
def test_verify_full_checks_the_host_name_and_verify_ca_does_not(tmp_path: Path) -> None:
    """A certificate issued for localhost only, reached as 127.0.0.1."""
    pki = make_pki(tmp_path / "pki", server_names=("localhost",))
    with postgres_rig.spawn_tls(pki) as server:
        with pytest.raises(PostgresConnectorError) as e:
            PostgresConnection(PostgresConnectorConfig.parse(_props(server, **_tls(pki))).dsn())
        message = str(e.value)
        assert "does not match host name" in message and "\n" not in message
        assert "set database.sslmode=verify-ca to check only the CA" in message
        PostgresConnection(PostgresConnectorConfig.parse(_props(server, **_tls(pki, mode="verify-ca"))).dsn()).close()


# -- the Spark sink's PostgreSQL target (the warehouse) -----------------------------------------------
def _warehouse_job(server: PostgresServer, pki: Pki, **tls_keys: str) -> JobSpec:
    sink = {"type": "postgres", "dsn": f"postgresql://cdc@{server.host}:{server.port}/{server.dbname}", **tls_keys}
    return JobSpec("wh", {"connector.class": "postgres", "topic.prefix": "wh"}, sink=sink)


def test_the_warehouse_writer_connects_with_verify_full_and_refuses_a_wrong_ca(
    tls_db: PostgresServer, pki: Pki
) -> None:
    config = SinkConfig.parse(sink_config(_warehouse_job(tls_db, pki, **_tls(pki, prefix=""))))
    assert config.tls["sslmode"] == "verify-full"
    writer = PostgresWriter(config)
    try:
        assert writer.conn.execute("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").fetchone() == (True,)
    finally:
        writer.close()
    wrong = SinkConfig.parse(sink_config(_warehouse_job(tls_db, pki, **_tls(pki, ca=pki.other_ca_cert, prefix=""))))
    with pytest.raises(SinkConfigError) as e:
        PostgresWriter(wrong)
    assert "\n" not in str(e.value) and "point sslrootcert at the CA certificate" in str(e.value)
    with pytest.raises(SinkConfigError) as e:  # TLS keys of a target that has no connection
        SinkConfig.parse({"target": "delta", "path": "/lake", "sslmode": "require"})
    assert "sslmode" in str(e.value) and "target=delta" in str(e.value)


# -- end to end: cdc validate, cdc run (snapshot, then streaming) into Delta, cdc verify ---------------
def _job(tmp_path: Path, server: PostgresServer, source_tls: dict[str, str], name: str = "tlsbank") -> Path:
    source = "\n".join(
        f"  {k}: '{v}'" for k, v in {**_props(server), "slot.name": f"{name}_slot", **source_tls}.items()
    )
    job = tmp_path / f"{name}.yaml"
    job.write_text(
        f"""name: {name}
source:
{source}
transport:
  state.dir: {tmp_path / "state"}
sink:
  type: delta
  path: {tmp_path / "lake"}
spark:
  master: local[2]
"""
    )
    return job


def _rows(server: PostgresServer) -> dict[int, tuple[Any, ...]]:
    with server.connect() as conn:
        return {r[0]: (r[1], r[2]) for r in conn.execute("SELECT id, owner, balance FROM accounts").fetchall()}


@pytest.mark.slow
def test_cdc_run_snapshot_and_streaming_over_verify_full_into_delta(
    tmp_path: Path, tls_db: PostgresServer, pki: Pki
) -> None:
    rng = random.Random(SEED)
    with tls_db.connect() as conn:
        conn.execute("CREATE TABLE accounts (id int PRIMARY KEY, owner text NOT NULL, balance numeric(12,2))")
        for i in range(1, 31):
            conn.execute("INSERT INTO accounts VALUES (%s, %s, %s)", (i, f"owner{i}", rng.randrange(10**6) / 100))
    job = _job(tmp_path, tls_db, _tls(pki))

    res = run_cdc("validate", str(job))  # logs in over TLS, with the client certificate
    assert res.returncode == 0, res.stdout + res.stderr

    res = run_cdc("run", str(job), "--until-caught-up", timeout=400)  # snapshot
    assert res.returncode == 0, res.stderr[-3000:]
    with tls_db.connect() as conn:  # streamed over the replication connection
        for i in rng.sample(range(1, 31), 8):
            conn.execute("UPDATE accounts SET balance = %s WHERE id = %s", (rng.randrange(10**6) / 100, i))
        conn.execute("DELETE FROM accounts WHERE id > 25")
        conn.execute("INSERT INTO accounts VALUES (100, 'streamed', 1.5)")
    res = run_cdc("run", str(job), "--until-caught-up", timeout=400)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "micro-batch 1 applied" in res.stderr
    lake = DeltaTable(str(tmp_path / "lake" / "tls_public_accounts")).to_pyarrow_table().to_pylist()
    source = _rows(tls_db)
    assert 100 in source and 26 not in source
    assert {r["id"]: (r["owner"], r["balance"]) for r in lake if not r["__deleted"]} == source

    res = run_cdc("verify", str(job), timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "0 differences" in res.stdout


def test_cdc_validate_and_run_refuse_a_wrong_ca_and_disable_in_one_line(
    tmp_path: Path, tls_db: PostgresServer, pki: Pki
) -> None:
    wrong = _job(tmp_path, tls_db, _tls(pki, ca=pki.other_ca_cert), "wrongca")
    res = run_cdc("validate", str(wrong))
    out = res.stdout + res.stderr
    assert res.returncode != 0
    assert "source['database.sslmode']: cannot connect to" in out and "certificate verify failed" in out, out
    assert "point database.sslrootcert at the CA certificate" in out, out
    res = run_cdc("run", str(wrong), "--until-caught-up", timeout=120)
    assert res.returncode != 0 and "Traceback" not in res.stderr
    (last,) = [ln for ln in res.stderr.splitlines() if ln.startswith("error: ")]
    assert "certificate verify failed" in last and "point database.sslrootcert at the CA" in last

    plain = _job(tmp_path, tls_db, {"database.sslmode": "disable"}, "plain")
    res = run_cdc("validate", str(plain))
    out = res.stdout + res.stderr
    assert res.returncode != 0
    assert "set database.sslmode to require, verify-ca or verify-full" in out, out

    sink_wrong = tmp_path / "sinkwrong.yaml"  # the warehouse's TLS keys are checked by cdc validate too
    sink_wrong.write_text(
        _job(tmp_path, tls_db, _tls(pki), "sinkwrong")
        .read_text()
        .replace(
            f"sink:\n  type: delta\n  path: {tmp_path / 'lake'}\n",
            f"sink:\n  type: postgres\n  dsn: postgresql://cdc@{tls_db.host}:{tls_db.port}/{tls_db.dbname}\n"
            + "".join(f"  {k}: '{v}'\n" for k, v in _tls(pki, ca=pki.other_ca_cert, prefix="").items()),
        )
    )
    res = run_cdc("validate", str(sink_wrong))
    out = res.stdout + res.stderr
    assert res.returncode != 0
    assert (
        "sink.sslmode: cannot connect: SSL error: certificate verify failed" in out
        and "point sink.sslrootcert at the CA certificate" in out
    ), out
