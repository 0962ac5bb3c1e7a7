"""Issue 33, item 1: a stored secret is never sent where it was not stored for.

Before the fix, `GET /connectors/shop/config` showed the password as `[hidden]`, and a `PUT` of
that config with `database.hostname`/`database.port` pointing at the caller's server made the
worker log in there with the stored password; a server that asked for `mysql_clear_password`
received it as it is (the probe's fake server logged `cleartext_password=b'cdcpw\\x00'`).

Now (cdc.api.sensitive.keep_hidden) a `[hidden]` secret is kept only when the host, port, user,
URL and TLS keys of its client are unchanged; otherwise the update is refused naming the key to
send again, before anything connects. And the MySQL and PostgreSQL connectors refuse the
cleartext login methods unless the server's certificate is verified, as the MySQL client refuses
`mysql_clear_password` unless enabled. The hostile MySQL server is tests/security/fake_mysql.py;
the PostgreSQL one is a real private server whose pg_hba.conf says `password`.
"""

from __future__ import annotations

import random
import re
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import psycopg
import pymysql
import pytest

from cdc.api.errors import ConfigException, ConnectException
from cdc.api.sensitive import HIDDEN, is_destination, keep_hidden, moved_destinations
from cdc_mysql.config import MySqlConnectorConfig
from cdc_mysql.connection import MySqlConnection
from cdc_postgres.config import PostgresConnectorConfig
from cdc_postgres.connection import PostgresConnection
from tests.mysql.harness import connector_props as mysql_props
from tests.postgres.harness import connector_props as postgres_props
from tests.rest.conftest import Rest
from tests.rig import MariaDbServer, PostgresServer
from tests.rig import postgres as postgres_rig
from tests.security.fake_mysql import CleartextAskingServer

STORED = {
    "connector.class": "io.debezium.connector.mysql.MySqlConnector",
    "database.hostname": "db.internal",
    "database.port": "3306",
    "database.user": "cdc",
    "database.password": "s3cret",
    "database.ssl.mode": "verify_identity",
    "database.include.list": "shop",
    "schema.history.internal.kafka.bootstrap.servers": "kafka:9092",
    "schema.history.internal.producer.sasl.jaas.config": "org.apache...PlainLoginModule required password=x;",
    "topic.prefix": "shop",
}


# -- the rule --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("database.hostname", "evil.example"),
        ("database.port", "3307"),
        ("database.user", "root"),
        ("database.ssl.mode", "disabled"),
        ("database.ssl.truststore", "/tmp/evil.jks"),
    ],
)
def test_a_hidden_password_is_refused_when_its_destination_changes(key: str, value: str) -> None:
    new = {**STORED, "database.password": HIDDEN, key: value}
    with pytest.raises(ConfigException) as caught:
        keep_hidden(STORED, new)
    message = str(caught.value)
    assert caught.value.name == "database.password"
    assert message.startswith(f"database.password: the stored secret is not sent to a changed {key};")
    assert "give database.password again" in message and "\n" not in message
    assert "s3cret" not in message


def test_a_removed_or_added_destination_key_counts_as_a_change() -> None:
    removed = {k: v for k, v in STORED.items() if k != "database.ssl.mode"} | {"database.password": HIDDEN}
    with pytest.raises(ConfigException, match=r"changed database\.ssl\.mode"):
        keep_hidden(STORED, removed)  # verify_identity → the default (preferred): a downgrade
    added = {**STORED, "database.password": HIDDEN, "database.ssl.ca": "/tmp/evil-ca.pem"}
    with pytest.raises(ConfigException, match=r"changed database\.ssl\.ca"):
        keep_hidden(STORED, added)


def test_the_secret_given_again_or_an_unrelated_change_is_accepted() -> None:
    resent = {**STORED, "database.hostname": "db2.internal", "database.password": "n3w"}
    assert keep_hidden(STORED, resent) == resent
    unrelated = {**STORED, "database.password": HIDDEN, "database.include.list": "shop,crm", "topic.prefix": "x"}
    assert keep_hidden(STORED, unrelated)["database.password"] == "s3cret"
    # The Kafka client's secret is bound to its own client's keys, not the database's (and back).
    other = {**STORED, "schema.history.internal.producer.sasl.jaas.config": HIDDEN, "database.password": "p"}
    other["database.hostname"] = "db2.internal"
    assert (
        keep_hidden(STORED, other)["schema.history.internal.producer.sasl.jaas.config"]
        == STORED["schema.history.internal.producer.sasl.jaas.config"]
    )
    moved = {**other, "schema.history.internal.kafka.bootstrap.servers": "evil:9092"}
    jaas = "schema.history.internal.producer.sasl.jaas.config"
    with pytest.raises(ConfigException, match=re.escape(f"{jaas}: the stored")):
        keep_hidden(STORED, moved)


def test_destination_keys_by_name() -> None:
    for key in (
        "database.hostname", "database.port", "database.user", "database.ssl.mode", "database.sslmode",
        "database.sslrootcert", "connection.url", "producer.override.bootstrap.servers",
        "producer.override.security.protocol", "producer.override.sasl.mechanism", "key.converter.schema.registry.url",
    ):  # fmt: skip
        assert is_destination(key), key
    for key in ("database.password", "database.include.list", "topic.prefix", "database.server.id", "slot.name"):
        assert not is_destination(key), key


def test_seeded_random_updates_keep_a_secret_only_for_its_destination() -> None:
    """Random stored configs and random updates: a `[hidden]` secret is restored exactly when no
    destination key of its client changed, and refused naming it otherwise."""
    rng = random.Random(33)
    clients = ["database", "producer", "schema", "key", ""]
    tails = ["hostname", "port", "user", "url", "ssl.mode", "sslrootcert", "include.list", "timeout.ms", "name"]
    for _ in range(400):
        old: dict[str, str] = {}
        for _ in range(rng.randint(1, 8)):
            client = rng.choice(clients)
            old[f"{client}.{rng.choice(tails)}" if client else rng.choice(tails)] = str(rng.randint(0, 3))
        secret = rng.choice([f"{c}.password" if c else "password" for c in clients])
        old[secret] = "v" + str(rng.random())
        new = dict(old) | {secret: HIDDEN}
        for _ in range(rng.randint(0, 3)):
            key = rng.choice([*old, f"{rng.choice(clients)}.{rng.choice(tails)}"])
            if key == secret:
                continue
            if rng.random() < 0.3:
                new.pop(key, None)
            else:
                new[key] = str(rng.randint(0, 3))
        group = secret.split(".", 1)[0] if "." in secret else None
        changed = [
            k
            for k in set(old) | set(new)
            if k != secret
            and is_destination(k)
            and (group is None or k.split(".", 1)[0] == group)
            and old.get(k) != new.get(k)
        ]
        assert moved_destinations(old, new, secret) == sorted(changed)
        if changed:
            with pytest.raises(ConfigException) as caught:
                keep_hidden(old, new)
            assert caught.value.name == secret and old[secret] not in str(caught.value)
        else:
            assert keep_hidden(old, new)[secret] == old[secret]


# -- over REST, on a real worker -------------------------------------------------------------------


@pytest.fixture
def rest(tmp_path: Path) -> Iterator[Rest]:
    r = Rest(tmp_path)
    yield r
    r.close()


@pytest.fixture
def hostile() -> Iterator[CleartextAskingServer]:
    with CleartextAskingServer() as server:
        yield server


@pytest.mark.integration
def test_rest_put_or_patch_cannot_redirect_the_stored_password(
    rest: Rest, mariadb_db: MariaDbServer, hostile: CleartextAskingServer
) -> None:
    config = mysql_props(mariadb_db)
    assert rest.http.post("/connectors", json={"name": "shop", "config": config}).status_code == 201
    shown = rest.http.get("/connectors/shop/config").json()
    assert shown["database.password"] == HIDDEN

    redirected = {**shown, "database.hostname": "127.0.0.1", "database.port": str(hostile.port)}
    r = rest.http.put("/connectors/shop/config", json=redirected)
    assert r.status_code == 400, r.text
    assert "database.password: the stored secret is not sent to a changed database.port" in r.json()["message"]
    r = rest.http.patch("/connectors/shop/config", json={"database.port": str(hostile.port)})
    assert r.status_code == 400, r.text
    assert "give database.password again" in r.json()["message"]
    assert hostile.connections == 0, "nothing may connect to the new destination"
    assert rest.http.get("/connectors/shop/config").json()["database.port"] == str(mariadb_db.port)

    # An update that leaves the destination alone keeps the stored password and still logs in.
    r = rest.http.put("/connectors/shop/config", json={**shown, "poll.interval.ms": "75"})
    assert r.status_code == 200, r.text
    r = rest.http.patch("/connectors/shop/config", json={"poll.interval.ms": "60"})
    assert r.status_code == 200, r.text
    assert r.json()["config"]["database.password"] == HIDDEN
    assert r.json()["config"]["poll.interval.ms"] == "60"


@pytest.mark.integration
def test_rest_create_against_a_cleartext_asking_server_gives_it_no_password(
    rest: Rest, mariadb_db: MariaDbServer, hostile: CleartextAskingServer
) -> None:
    config = mysql_props(mariadb_db, **{"database.port": str(hostile.port), "database.hostname": "127.0.0.1"})
    r = rest.http.post("/connectors", json={"name": "shop", "config": config})
    assert r.status_code == 400, r.text
    assert "asked for the password in clear text" in r.json()["message"]
    assert "database.ssl.mode=verify_ca or verify_identity" in r.json()["message"]
    assert hostile.connections >= 1
    assert all(mariadb_db.cdc_password.encode() not in sent for sent in hostile.after_switch), hostile.after_switch


# -- the connectors refuse cleartext logins ------------------------------------------------------------


@pytest.mark.integration
def test_mysql_refuses_mysql_clear_password_without_a_verified_certificate(
    mariadb_db: MariaDbServer, hostile: CleartextAskingServer
) -> None:
    password = "pw-" + uuid.uuid4().hex
    # The fake server works: plain PyMySQL hands it the password (what the connector did before).
    with pytest.raises(pymysql.err.OperationalError):
        pymysql.connect(host="127.0.0.1", port=hostile.port, user="cdc", password=password, connect_timeout=5)
    assert hostile.after_switch == [password.encode() + b"\x00"]

    for mode in ("disabled", "preferred"):  # the fake offers no TLS: required would fail first
        props = mysql_props(mariadb_db, **{"database.hostname": "127.0.0.1", "database.port": str(hostile.port)})
        props.update({"database.password": password, "database.ssl.mode": mode})
        with pytest.raises(ConnectException) as caught:
            MySqlConnection(MySqlConnectorConfig(props)).connect()
        message = str(caught.value)
        assert "asked for the password in clear text" in message, message
        assert "set database.ssl.mode=verify_ca or verify_identity" in message and "\n" not in message
        assert password not in message
    assert all(password.encode() not in sent for sent in hostile.after_switch[1:]), hostile.after_switch


@pytest.fixture(scope="module")
def cleartext_postgres() -> Iterator[PostgresServer]:
    password = "pg-" + uuid.uuid4().hex
    with postgres_rig.spawn_password_auth("cdc_clear", password, method="password") as server:
        yield replace(server, user="cdc_clear", password=password)


@pytest.mark.integration
def test_postgres_refuses_the_password_method_without_a_verified_certificate(
    cleartext_postgres: PostgresServer,
) -> None:
    server = cleartext_postgres
    # The server really asks for the password in clear text, and plain libpq sends it.
    with psycopg.connect(
        host=server.host, port=server.port, user=server.user, password=server.password, dbname=server.dbname
    ) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
    for mode in ("disable", "allow", "prefer"):  # the server has no TLS: require would fail first
        props = postgres_props(server, **{"database.password": server.password, "database.sslmode": mode})
        dsn = PostgresConnectorConfig(props).dsn()
        assert dsn["require_auth"] == "!password"
        with pytest.raises(ConnectException) as caught:
            PostgresConnection(dsn, connect_timeout=5)
        message = str(caught.value)
        assert "server requested a cleartext password" in message, message
        assert "set database.sslmode=verify-ca or verify-full" in message
        assert server.password not in message
    verified = postgres_props(server, **{"database.password": "x", "database.sslmode": "verify-full"})
    assert "require_auth" not in PostgresConnectorConfig(verified).dsn()
