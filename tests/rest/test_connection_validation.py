"""Issue 31, item 8: a config the database refuses is refused over REST with 400, not created.

Debezium's `validate` runs `validateConnection` once every key is valid, and Kafka Connect's
herder refuses a create or update with "Connector configuration is invalid and contains the
following N error(s)". Before the fix `POST /connectors` with a wrong database password
returned 201 and only the task failed, later. Here, on real servers: a wrong password, a host
that accepts the connection and never answers (the check is bounded: the call returns), the
validate endpoint's ConfigInfos, an update, and the good password still creating the connector.
No password shows in a response or a log line, and the check creates no replication slot.

The session PostgreSQL trusts every local login, so the PostgreSQL tests use a private server
with password logins.
"""

from __future__ import annotations

import logging
import socket
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.mysql.harness import connector_props as mysql_props
from tests.postgres.harness import connector_props as postgres_props
from tests.rest.conftest import Rest
from tests.rig import MariaDbServer, PostgresServer
from tests.rig import postgres as postgres_rig

pytestmark = pytest.mark.integration  # the private PostgreSQL below

MYSQL = "io.debezium.connector.mysql.MySqlConnector"
POSTGRES = "io.debezium.connector.postgresql.PostgresConnector"
INVALID = "Connector configuration is invalid and contains the following 1 error(s):\n"
WHERE = "You can also find the above list of errors at the endpoint `/connector-plugins/{connectorType}/config/"
PG_USER = "cdc_login"
PG_PASSWORD = "pg-" + uuid.uuid4().hex


def _secret() -> str:
    return "Wr0ng-" + uuid.uuid4().hex


@pytest.fixture
def rest(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> Iterator[Rest]:
    """The in-process worker and REST API, with every log line captured (a password must be in none)."""
    caplog.set_level(logging.DEBUG)
    r = Rest(tmp_path)
    yield r
    r.close()


@pytest.fixture(scope="module")
def password_postgres() -> Iterator[PostgresServer]:
    with postgres_rig.spawn_password_auth(PG_USER, PG_PASSWORD) as server:
        yield replace(server, user=PG_USER, password=PG_PASSWORD)


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts TCP connections and never answers (a wrong service, a stuck server)."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield server.getsockname()[1]


def _postgres(server: PostgresServer, **extra: str) -> dict[str, str]:
    return postgres_props(server, **{"database.password": server.password, **extra})


def _refused(r: httpx.Response, secret: str, caplog: pytest.LogCaptureFixture) -> str:
    """Kafka Connect's 400 for an invalid config, its one error; the secret in neither the body nor a log line."""
    assert r.status_code == 400, r.text
    assert secret not in r.text and secret not in caplog.text
    message = r.json()["message"]
    assert message.startswith(INVALID) and message.endswith(WHERE + "validate`"), message
    return message


def _validate(rest: Rest, config: dict[str, str]) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """`PUT /connector-plugins/{type}/config/validate`: the body, and the errors by key."""
    r = rest.http.put(f"/connector-plugins/{config['connector.class']}/config/validate", json={"name": "c", **config})
    assert r.status_code == 200, r.text
    body = r.json()
    errors = {c["value"]["name"]: c["value"]["errors"] for c in body["configs"] if c["value"] and c["value"]["errors"]}
    return body, errors


def _slots(server: PostgresServer) -> list[str]:
    with replace(server, user="postgres", password="").connect() as conn:
        return [row[0] for row in conn.execute("SELECT slot_name FROM pg_replication_slots").fetchall()]


# -- MySQL / MariaDB ----------------------------------------------------------------------------


def test_mysql_wrong_password_is_refused_with_400_and_nothing_is_created(
    rest: Rest, mariadb_db: MariaDbServer, caplog: pytest.LogCaptureFixture
) -> None:
    wrong = _secret()
    config = mysql_props(mariadb_db, **{"database.password": wrong})
    message = _refused(rest.http.post("/connectors", json={"name": "shop", "config": config}), wrong, caplog)
    user = mariadb_db.cdc_user
    assert f"Cannot connect to {mariadb_db.host}:{mariadb_db.port} as {user!r}" in message
    assert f"Access denied for user '{user}'@" in message and "Check database.password" in message
    assert rest.http.get("/connectors").json() == []
    assert rest.http.get("/connectors/shop/status").status_code == 404
    # PUT /connectors/{name}/config creates too: refused the same way
    _refused(rest.http.put("/connectors/shop/config", json=config), wrong, caplog)
    assert rest.http.get("/connectors").json() == []


def test_mysql_validate_reports_the_refused_login_on_database_password(
    rest: Rest, mariadb_db: MariaDbServer, caplog: pytest.LogCaptureFixture
) -> None:
    wrong = _secret()
    body, errors = _validate(rest, mysql_props(mariadb_db, **{"database.password": wrong}))
    assert body["error_count"] >= 1 and list(errors) == ["database.password"], errors
    assert f"Access denied for user '{mariadb_db.cdc_user}'@" in errors["database.password"][0]
    assert wrong not in str(body) and wrong not in caplog.text
    body, errors = _validate(rest, mysql_props(mariadb_db))
    assert body["error_count"] == 0 and errors == {}


def test_mysql_good_password_creates_and_a_wrong_one_cannot_replace_it(
    rest: Rest, mariadb_db: MariaDbServer, caplog: pytest.LogCaptureFixture
) -> None:
    config = mysql_props(mariadb_db)
    r = rest.http.post("/connectors", json={"name": "shop", "config": config})
    assert r.status_code == 201, r.text
    stored = rest.http.get("/connectors/shop/config").json()
    wrong = _secret()
    _refused(rest.http.put("/connectors/shop/config", json={**config, "database.password": wrong}), wrong, caplog)
    _refused(rest.http.patch("/connectors/shop/config", json={"database.password": wrong}), wrong, caplog)
    assert rest.http.get("/connectors").json() == ["shop"]
    assert rest.http.get("/connectors/shop/config").json() == stored


def test_mysql_host_that_never_answers_is_refused_and_the_call_returns(
    rest: Rest, mariadb_db: MariaDbServer, silent_port: int, caplog: pytest.LogCaptureFixture
) -> None:
    """The check waits a bounded time (5 s without connect.timeout.ms), well inside the client's 30 s."""
    secret = _secret()
    config = mysql_props(mariadb_db, **{"database.port": str(silent_port), "database.password": secret})
    message = _refused(rest.http.post("/connectors", json={"name": "shop", "config": config}), secret, caplog)
    assert f"Cannot connect to 127.0.0.1:{silent_port}" in message and "Check database.hostname" in message
    assert rest.http.get("/connectors").json() == []


# -- PostgreSQL ---------------------------------------------------------------------------------


def test_postgres_wrong_password_is_refused_with_400_and_no_slot_is_made(
    rest: Rest, password_postgres: PostgresServer, caplog: pytest.LogCaptureFixture
) -> None:
    wrong = _secret()
    config = _postgres(password_postgres, **{"database.password": wrong})
    message = _refused(rest.http.post("/connectors", json={"name": "bank", "config": config}), wrong, caplog)
    assert f"cannot connect to PostgreSQL at {password_postgres.host}:{password_postgres.port}" in message
    assert f'password authentication failed for user "{PG_USER}"' in message
    assert "check database.password" in message
    assert rest.http.get("/connectors").json() == []
    assert config["slot.name"] not in _slots(password_postgres)


def test_postgres_validate_reports_the_refused_login_and_creates_no_slot(
    rest: Rest, password_postgres: PostgresServer, caplog: pytest.LogCaptureFixture
) -> None:
    wrong = _secret()
    body, errors = _validate(rest, _postgres(password_postgres, **{"database.password": wrong}))
    assert body["error_count"] >= 1 and list(errors) == ["database.password"], errors
    assert "password authentication failed" in errors["database.password"][0]
    assert wrong not in str(body) and wrong not in caplog.text
    good = _postgres(password_postgres)
    body, errors = _validate(rest, good)
    assert body["error_count"] == 0 and errors == {}
    assert good["slot.name"] not in _slots(password_postgres), "validation is read-only: no replication slot"


def test_postgres_good_password_creates_the_connector(rest: Rest, password_postgres: PostgresServer) -> None:
    r = rest.http.post("/connectors", json={"name": "bank", "config": _postgres(password_postgres)})
    assert r.status_code == 201, r.text
    assert rest.http.get("/connectors").json() == ["bank"]
    assert rest.http.delete("/connectors/bank").status_code == 204


def test_postgres_host_that_never_answers_is_refused_and_the_call_returns(
    rest: Rest, password_postgres: PostgresServer, silent_port: int, caplog: pytest.LogCaptureFixture
) -> None:
    config = _postgres(password_postgres, **{"database.port": str(silent_port)})
    message = _refused(rest.http.post("/connectors", json={"name": "bank", "config": config}), PG_PASSWORD, caplog)
    assert f"cannot connect to PostgreSQL at 127.0.0.1:{silent_port}" in message
    assert "check database.hostname" in message
    assert rest.http.get("/connectors").json() == []
