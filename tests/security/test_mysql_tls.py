"""MySQL/MariaDB over TLS (issue 17): Debezium's `database.ssl.*` keys, PEM equivalents, and refusals.

A private MariaDB serves a certificate of a CA generated here; its `cdc` user is created
REQUIRE X509, so nothing reaches it without TLS and a client certificate of that CA. The
connector (snapshot and binlog stream), `cdc run`, `cdc verify` and `cdc validate` are run
against it; a wrong CA, a JKS store and `disabled` are refused with one line naming the key.
"""

from __future__ import annotations

import random
import shutil
import ssl
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc.api import ConfigException, ConfigType, ConnectException
from cdc_mysql import tls
from cdc_mysql.config import CONFIG_DEF, MySqlConnectorConfig, validate
from cdc_mysql.connection import MySqlConnection
from tests.jobs.jobfile import mysql_delta_job
from tests.mysql.harness import TaskRunner, connector_props, execute
from tests.rig import MariaDbServer
from tests.rig import mariadb as mariadb_rig
from tests.rig.tls import Pki, make_pki
from tests.support.examples import examples
from tests.support.proc import REPO, run_cdc

SEED = random.randrange(2**32)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def tls_mariadb(pki: Pki) -> Iterator[MariaDbServer]:
    with mariadb_rig.spawn_tls(pki, require="X509") as server:
        yield server


@pytest.fixture
def tls_db(tls_mariadb: MariaDbServer) -> Iterator[MariaDbServer]:
    with tls_mariadb.fresh_database() as server:
        yield server


def _pem(pki: Pki, mode: str = "verify_identity", ca: Path | None = None) -> dict[str, str]:
    return {
        tls.SSL_MODE: mode,
        tls.CA: str(ca or pki.ca_cert),
        tls.CERT: str(pki.client_cert),
        tls.KEY: str(pki.client_key),
    }


def _stores(pki: Pki, mode: str = "verify_identity") -> dict[str, str]:
    return {
        tls.SSL_MODE: mode,
        tls.TRUSTSTORE: str(pki.truststore_p12("trust-pw")),
        tls.TRUSTSTORE_PASSWORD: "trust-pw",
        tls.KEYSTORE: str(pki.keystore_p12("key-pw")),
        tls.KEYSTORE_PASSWORD: "key-pw",
    }


def _keytool(*args: str) -> None:
    keytool = shutil.which("keytool")
    assert keytool, "keytool (from the JDK Spark runs on) is needed to make real Java stores"
    subprocess.run([keytool, *args], check=True, capture_output=True)


# -- configuration, without a server -----------------------------------------------------------------
def test_the_store_passwords_are_secrets_and_every_key_is_declared() -> None:
    keys = CONFIG_DEF.config_keys
    assert set(tls.KEYS) <= set(keys)
    secrets = {name for name in tls.KEYS if keys[name].type == ConfigType.PASSWORD}
    assert secrets == {tls.KEYSTORE_PASSWORD, tls.TRUSTSTORE_PASSWORD, tls.KEY_PASSWORD}
    assert keys[tls.SSL_MODE].default_value == "preferred"  # Debezium's default


@settings(max_examples=examples(40), deadline=None)
@given(mode=st.sampled_from(tls.MODES), cased=st.booleans(), stores=st.booleans(), identity=st.booleans())
def test_each_mode_gives_pymysql_its_semantics(pki: Pki, mode: str, cased: bool, stores: bool, identity: bool) -> None:
    props = _stores(pki, mode) if stores else _pem(pki, mode)
    if not identity:
        for key in (tls.KEYSTORE, tls.KEYSTORE_PASSWORD, tls.CERT, tls.KEY):
            props.pop(key, None)
    props[tls.SSL_MODE] = mode.upper() if cased else mode
    kwargs = tls.MySqlTls.from_props(props).pymysql_kwargs()
    # Cleartext login plugins are refused unless the server's certificate is verified.
    guard = kwargs.pop("auth_plugin_map", None)
    assert guard == (None if mode in tls.VERIFYING else tls.CLEARTEXT_REFUSED)
    if mode == "disabled":
        assert kwargs == {"ssl_disabled": True}
        return
    if mode == "preferred" and not identity:
        assert kwargs == {}  # PyMySQL's own PREFERRED: TLS when offered, unchecked
        return
    ctx = kwargs["ssl"]
    assert isinstance(ctx, ssl.SSLContext)
    assert ctx.verify_mode == (ssl.CERT_REQUIRED if mode in tls.VERIFYING else ssl.CERT_NONE)
    assert ctx.check_hostname == (mode == "verify_identity")
    if mode in tls.VERIFYING:
        (ca,) = ctx.get_ca_certs()  # only the configured CA: not the system's
        assert dict(x[0] for x in ca["subject"])["commonName"] == "cdc test CA"


def test_unknown_mode_and_contradicting_keys_are_refused_naming_the_key(pki: Pki) -> None:
    base = connector_props_offline()
    problems = {v.name: v.errors for v in validate({**base, tls.SSL_MODE: "verify_full"}) if v.errors}
    assert tls.SSL_MODE in problems
    both = {**base, **_stores(pki), tls.CA: str(pki.ca_cert)}
    problems = {v.name: v.errors for v in validate(both) if v.errors}
    assert problems[tls.CA] == [f"{tls.TRUSTSTORE} and {tls.CA} both give the same certificates: set only one of them"]
    key_only = {**base, tls.KEY: str(pki.client_key)}
    problems = {v.name: v.errors for v in validate(key_only) if v.errors}
    assert tls.CERT in problems[tls.KEY][0]
    with pytest.raises(ConfigException) as e:
        MySqlConnectorConfig(key_only)
    assert e.value.name == tls.KEY


def connector_props_offline() -> dict[str, str]:
    return {
        "connector.class": "mysql",
        "database.hostname": "127.0.0.1",
        "database.user": "cdc",
        "database.server.id": "5401",
        "topic.prefix": "t",
    }


@pytest.mark.e2e
@pytest.mark.parametrize("store", [tls.KEYSTORE, tls.TRUSTSTORE])
def test_a_java_keystore_is_refused_with_the_keytool_command(pki: Pki, tmp_path: Path, store: str) -> None:
    jks = tmp_path / "store.jks"
    if store == tls.TRUSTSTORE:
        _keytool(
            "-importcert", "-noprompt", "-alias", "ca", "-file", str(pki.ca_cert),
            "-keystore", str(jks), "-storetype", "JKS", "-storepass", "changeit",
        )  # fmt: skip
    else:
        _keytool(
            "-importkeystore", "-srckeystore", str(pki.keystore_p12("key-pw")), "-srcstoretype", "PKCS12",
            "-srcstorepass", "key-pw", "-destkeystore", str(jks), "-deststoretype", "JKS",
            "-deststorepass", "changeit", "-destkeypass", "changeit", "-noprompt",
        )  # fmt: skip
    props = {tls.SSL_MODE: "verify_ca", store: str(jks), f"{store}.password": "changeit"}
    with pytest.raises(ConfigException) as e:
        tls.MySqlTls.from_props(props).pymysql_kwargs()
    message = str(e.value)
    assert e.value.name == store and "\n" not in message
    assert f"{store}={jks} is a Java KeyStore (JKS)" in message
    assert "keytool -importkeystore" in message and "PKCS12" in message
    assert (tls.CA if store == tls.TRUSTSTORE else tls.CERT) in message  # the PEM way out


@pytest.mark.e2e
def test_a_truststore_made_by_keytool_as_pkcs12_is_read(pki: Pki, tmp_path: Path) -> None:
    """Java's PKCS12 truststores keep CA certificates as trusted-certificate bags, without a key."""
    store = tmp_path / "truststore.p12"
    _keytool(
        "-importcert", "-noprompt", "-alias", "ca", "-file", str(pki.ca_cert),
        "-keystore", str(store), "-storetype", "PKCS12", "-storepass", "changeit",
    )  # fmt: skip
    ctx = tls.MySqlTls.from_props(
        {tls.SSL_MODE: "verify_ca", tls.TRUSTSTORE: str(store), tls.TRUSTSTORE_PASSWORD: "changeit"}
    ).context()
    (ca,) = ctx.get_ca_certs()
    assert dict(x[0] for x in ca["subject"])["commonName"] == "cdc test CA"


def test_a_wrong_store_password_or_a_missing_file_names_the_key(pki: Pki, tmp_path: Path) -> None:
    props = {**_stores(pki), tls.KEYSTORE_PASSWORD: "wrong"}
    with pytest.raises(ConfigException) as e:
        tls.MySqlTls.from_props(props).context()
    assert e.value.name == tls.KEYSTORE and f"check {tls.KEYSTORE}.password" in str(e.value)
    missing = tmp_path / "nope.pem"
    with pytest.raises(ConfigException) as e:
        tls.MySqlTls.from_props(_pem(pki, ca=missing)).context()
    assert e.value.name == tls.CA and str(missing) in str(e.value) and "\n" not in str(e.value)


def test_cryptography_is_declared_and_does_the_caching_sha2_password_rsa_exchange() -> None:
    """MySQL 8's default login over plain TCP sends the password RSA-encrypted: PyMySQL needs cryptography."""
    deps = tomllib.loads((REPO / "plugins/mysql/pyproject.toml").read_text())["project"]["dependencies"]
    assert any(d.replace(" ", "").lower().startswith("cryptography") for d in deps), deps
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import padding, rsa
    from pymysql import _auth

    rng = random.Random(SEED)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    password, salt = bytes(rng.randrange(33, 127) for _ in range(12)), bytes(rng.randrange(256) for _ in range(20))
    sent = _auth.sha2_rsa_encrypt(password, salt, public)
    plain = key.decrypt(sent, padding.OAEP(padding.MGF1(hashes.SHA1()), hashes.SHA1(), None))
    assert bytes(a ^ b for a, b in zip(plain, (salt * 2)[: len(plain)], strict=True)) == password + b"\0"


# -- against a MariaDB that requires TLS and a client certificate --------------------------------------
def _config(server: MariaDbServer, **tls_props: str) -> MySqlConnectorConfig:
    return MySqlConnectorConfig(connector_props(server, **{k.replace(".", "__"): v for k, v in tls_props.items()}))


def _cipher(conn: Any) -> str:
    with conn.cursor() as cur:
        cur.execute("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
        return str(cur.fetchone()[1])


@pytest.mark.parametrize("form", ["pem", "pkcs12"])
def test_the_connector_connects_and_reads_the_binlog_over_verified_tls(
    tls_db: MariaDbServer, pki: Pki, form: str
) -> None:
    props = _pem(pki) if form == "pem" else _stores(pki)
    connection = MySqlConnection(_config(tls_db, **props))
    try:
        assert _cipher(connection.conn)  # encrypted
        connection.check_binlog_access()  # the binlog dump connection logs in too (REQUIRE X509)
    finally:
        connection.close()


def test_a_wrong_ca_is_refused_in_one_line_naming_the_key(tls_db: MariaDbServer, pki: Pki) -> None:
    connection = MySqlConnection(_config(tls_db, **_pem(pki, "verify_ca", ca=pki.other_ca_cert)))
    with pytest.raises(ConnectException) as e:
        connection.connect()
    message = str(e.value)
    assert "\n" not in message and "certificate verify failed" in message
    assert f"not signed by a CA in {tls.CA} ({pki.other_ca_cert})" in message
    assert f"point {tls.TRUSTSTORE} or {tls.CA} at the CA certificate" in message
    with pytest.raises(ConnectException) as e:  # the binlog connection says the same
        MySqlConnection(_config(tls_db, **_pem(pki, "verify_ca", ca=pki.other_ca_cert))).check_binlog_access()
    assert tls.CA in str(e.value)


@pytest.mark.parametrize("mode", ["disabled", "required"])
def test_no_tls_or_no_client_certificate_against_require_x509_fails_clearly(tls_db: MariaDbServer, mode: str) -> None:
    with pytest.raises(ConnectException) as e:
        MySqlConnection(_config(tls_db, **{tls.SSL_MODE: mode})).connect()
    message = str(e.value)
    assert "Access denied" in message and "\n" not in message
    if mode == "disabled":
        assert f"with {tls.SSL_MODE}=disabled, a user created REQUIRE SSL or REQUIRE X509 is refused" in message
    else:
        assert f"REQUIRE X509 also needs a client certificate: set {tls.KEYSTORE}" in message


@pytest.mark.e2e
def test_required_without_a_tls_server_is_refused_not_sent_in_clear(pki: Pki) -> None:
    """A server without TLS (the ordinary rig) under `required` is refused, naming the fix."""
    with mariadb_rig.spawn_local(["--skip-ssl"]) as plain, pytest.raises(ConnectException) as e:
        MySqlConnection(_config(plain, **{tls.SSL_MODE: "required"})).connect()
    assert f"the server offers no TLS but {tls.SSL_MODE}=required requires it" in str(e.value)


@pytest.mark.e2e
def test_verify_identity_checks_the_host_name_and_verify_ca_does_not(tmp_path: Path) -> None:
    """A certificate issued for localhost only, reached as 127.0.0.1."""
    pki = make_pki(tmp_path / "pki", server_names=("localhost",))
    with mariadb_rig.spawn_tls(pki) as server:
        with pytest.raises(ConnectException) as e:
            MySqlConnection(_config(server, **_pem(pki, "verify_identity"))).connect()
        message = str(e.value)
        assert "mismatch" in message and "\n" not in message
        assert f"not issued for '{server.host}' ({tls.SSL_MODE}=verify_identity)" in message
        assert f"set {tls.SSL_MODE}=verify_ca to check only the CA" in message
        conn = MySqlConnection(_config(server, **_pem(pki, "verify_ca"))).connect()
        try:
            assert _cipher(conn)
        finally:
            conn.close()


def test_after_a_clean_restart_the_stream_reconnects_over_tls_and_loses_nothing(
    tls_db: MariaDbServer, pki: Pki
) -> None:
    """A clean shutdown ends the binlog dump with an EOF packet (not a lost socket): the stream must
    reconnect, with its TLS settings, rather than end in silence."""
    rng = random.Random(SEED)
    execute(tls_db, "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (0)")
    props = connector_props(tls_db, **{"errors.retry.delay.initial.ms": 100}) | _pem(pki)
    before, after = rng.randint(1, 20), rng.randint(1, 20)
    with TaskRunner(props) as runner:
        runner.wait_data(1)
        execute(tls_db, *(f"INSERT INTO t VALUES ({i})" for i in range(1, before + 1)))
        runner.wait_data(before + 1)
        tls_db.restart()  # SIGTERM: a clean shutdown
        execute(tls_db, *(f"INSERT INTO t VALUES ({i})" for i in range(before + 1, before + after + 1)))
        records = runner.wait_data(before + after + 1, timeout=40)
        assert runner.task.streaming is not None and runner.task.streaming.reconnects >= 1
    assert [r.value.get("after").get("id") for r in records] == list(range(before + after + 1))


@pytest.mark.e2e
def test_a_server_certificate_of_another_ca_after_a_restart_stops_the_stream_instead_of_waiting(
    tmp_path: Path,
) -> None:
    """The binlog stream reconnects after a restart; a certificate check that fails then is a setting to
    change, not an outage to wait out (errors.max.retries=-1 would retry forever)."""
    pki, other = make_pki(tmp_path / "pki"), make_pki(tmp_path / "other")
    with mariadb_rig.spawn_tls(pki) as server, server.fresh_database() as db:
        execute(db, "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1)")
        with TaskRunner(connector_props(db) | _pem(pki, "verify_ca")) as runner:
            runner.wait_data(1)  # the snapshot
            execute(db, "INSERT INTO t VALUES (2)")
            runner.wait_data(2)  # streaming
            shutil.copyfile(other.server_cert, pki.server_cert)  # the server now presents another CA's certificate
            shutil.copyfile(other.server_key, pki.server_key)
            server.restart()
            with pytest.raises(ConnectException) as e:
                runner.poll_until(lambda _: False, timeout=60, what="the stream to stop")
    message = str(e.value)
    assert "\n" not in message and "certificate verify failed" in message
    assert f"not signed by a CA in {tls.CA} ({pki.ca_cert})" in message


# -- end to end: cdc run (snapshot, then streaming) into Delta, cdc verify, cdc validate -----------------
def _lake(tmp_path: Path) -> dict[int, tuple[Any, ...]]:
    rows = DeltaTable(str(tmp_path / "lake" / "items")).to_pyarrow_table().to_pylist()
    return {r["id"]: (r["name"], r["qty"]) for r in rows if not r["__deleted"]}


def _source(server: MariaDbServer) -> dict[int, tuple[Any, ...]]:
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT id, name, qty FROM items")
        return {r[0]: (r[1], r[2]) for r in cur.fetchall()}


@pytest.mark.slow
def test_cdc_run_snapshot_and_streaming_over_verify_identity_into_delta(
    tmp_path: Path, tls_db: MariaDbServer, pki: Pki
) -> None:
    rng = random.Random(SEED)
    with tls_db.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL, qty INT)")
        cur.executemany(
            "INSERT INTO items VALUES (%s, %s, %s)", [(i, f"n{i}", rng.randrange(100)) for i in range(1, 41)]
        )
    props = connector_props(tls_db) | _stores(pki, "verify_identity")
    job = mysql_delta_job(tmp_path, "tlsshop", props, {f"{tls_db.database}.items": "keys: [id], target: items"})

    res = run_cdc("validate", str(job))  # logs in over TLS as the connector will
    assert res.returncode == 0, res.stdout + res.stderr

    res = run_cdc("run", str(job), "--until-caught-up", timeout=400)  # the snapshot
    assert res.returncode == 0, res.stderr[-3000:]
    assert _lake(tmp_path) == _source(tls_db)

    with tls_db.connect() as conn, conn.cursor() as cur:  # the binlog stream
        for i in rng.sample(range(1, 41), 10):
            cur.execute("UPDATE items SET qty = %s WHERE id = %s", (rng.randrange(100), i))
        cur.execute("DELETE FROM items WHERE id > 35")
        cur.execute("INSERT INTO items VALUES (100, 'streamed', 1)")
    res = run_cdc("run", str(job), "--until-caught-up", timeout=400)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "micro-batch 1 applied" in res.stderr  # changes only: they came through the binlog
    source = _source(tls_db)
    assert source[100] == ("streamed", 1) and 36 not in source
    assert _lake(tmp_path) == source

    res = run_cdc("verify", str(job), timeout=120)  # cdc verify's own connection, over TLS too
    assert res.returncode == 0, res.stdout + res.stderr
    assert "0 differences" in res.stdout


def test_cdc_validate_and_run_refuse_a_wrong_ca_and_disabled_in_one_line(
    tmp_path: Path, tls_db: MariaDbServer, pki: Pki
) -> None:
    tables = {f"{tls_db.database}.items": "keys: [id]"}
    wrong = mysql_delta_job(tmp_path, "wrongca", connector_props(tls_db) | _pem(pki, ca=pki.other_ca_cert), tables)
    res = run_cdc("validate", str(wrong))
    assert res.returncode != 0
    out = res.stdout + res.stderr
    assert f"source['{tls.SSL_MODE}']: cannot connect to {tls_db.host}:{tls_db.port} (certificate verify failed" in out
    assert f"not signed by a CA in {tls.CA} ({pki.other_ca_cert})" in out, out
    res = run_cdc("run", str(wrong), "--until-caught-up", timeout=120)
    assert res.returncode != 0 and "Traceback" not in res.stderr
    (last,) = [ln for ln in res.stderr.splitlines() if ln.startswith("error: ")]
    assert "certificate verify failed" in last and f"point {tls.TRUSTSTORE} or {tls.CA} at the CA" in last

    off = mysql_delta_job(tmp_path, "plain", connector_props(tls_db) | {tls.SSL_MODE: "disabled"}, tables)
    res = run_cdc("validate", str(off))
    assert res.returncode != 0
    assert (
        f"with {tls.SSL_MODE}=disabled, a user created REQUIRE SSL or REQUIRE X509 is refused"
        in res.stdout + res.stderr
    )
