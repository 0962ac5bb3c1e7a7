"""`POST /connectors/{name}/signals`: a signal through the connector's enabled channel, over REST.

The source channel runs the MySQL connector in the herder against the test's MariaDB: the
execute-snapshot signal lands in the signal table and the connector reads the table's rows as
`r` events. The file and kafka channels use a test connector (their delivery does not need a
database). Bad bodies are generated (hypothesis, seeded): each is a 400 naming its field.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from cdc.runtime.signal_log import TopicSignalLog
from tests.mysql.harness import connector_props, execute
from tests.mysql.incremental_support import create_signal_table, signal_props
from tests.rest.conftest import Rest, wait_until
from tests.rig import MariaDbServer
from tests.support.examples import examples
from tests.support.logs import topic_records


def _error(r: Any) -> str:
    return str(r.json()["message"])


def test_execute_snapshot_through_the_signal_table_reads_the_table(mariadb_db: MariaDbServer, tmp_path: Path) -> None:
    rng = random.Random(2201)
    ids = sorted(rng.sample(range(1, 10_000), 57))
    create_signal_table(mariadb_db)
    execute(
        mariadb_db,
        "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))",
        "INSERT INTO t VALUES " + ",".join(f"({i}, 'v{i}')" for i in ids),
    )
    props = connector_props(
        mariadb_db, snapshot__mode="no_data", notification__enabled__channels="sink",
        notification__sink__topic__name="notes", **signal_props(mariadb_db, incremental__snapshot__chunk__size="10"),
    )  # fmt: skip
    r = Rest(tmp_path)
    try:
        assert r.http.post("/connectors", json={"name": "my", "config": props}).status_code == 201
        # the schema change events follow the binlog position read: a signal row inserted now is streamed
        wait_until(lambda: topic_records(r.worker.log, "dbserver1"), timeout=60, what="the connector's start")
        table = f"{mariadb_db.database}.t"
        sent = r.http.post(
            "/connectors/my/signals",
            json={"id": "rest-1", "type": "execute-snapshot", "data": {"data-collections": [table]}},
        )
        assert sent.status_code == 202, sent.text
        assert sent.json()["channel"] == "source" and sent.json()["id"] == "rest-1"
        topic = f"dbserver1.{table}"

        def reads() -> list[int]:
            values = [json.loads(rec.value) for rec in topic_records(r.worker.log, topic) if rec.value]
            return sorted(v["payload"]["after"]["id"] for v in values if v["payload"]["op"] == "r")

        assert wait_until(lambda: reads() == ids and reads(), timeout=60, what="the snapshot's r events") == ids

        # the sink notifications go through the worker's runtime too (no source offset to store)
        def notes_() -> list[dict[str, Any]]:
            return [json.loads(rec.value)["payload"] for rec in topic_records(r.worker.log, "notes") if rec.value]

        notes = wait_until(lambda: (n := notes_()) and n[-1]["type"] == "COMPLETED" and n, what="COMPLETED")
        assert notes[0]["type"] == "STARTED" and notes[-1]["type"] == "COMPLETED", notes
        assert {n["id"] for n in notes} == {"rest-1"} and len(notes) == 2 + len(ids) // 10 + 1
        missing = r.http.post("/connectors/nope/signals", json={"type": "pause-snapshot"})
        assert missing.status_code == 404
    finally:
        r.close()


def _stopped(server: MariaDbServer, name: str, **extra: str) -> dict[str, Any]:
    """A MySQL connector created STOPPED: its config is there, its task is not (the channels need no task)."""
    return {"name": name, "config": connector_props(server, **extra), "initial_state": "STOPPED"}


def test_file_channel_appends_debeziums_json_line(rest: Rest, mariadb_db: MariaDbServer, tmp_path: Path) -> None:
    path = tmp_path / "state" / "connectors" / "f" / "signals.jsonl"
    config = _stopped(mariadb_db, "f", signal__enabled__channels="file", signal__file=str(path))
    created = rest.http.post("/connectors", json=config)
    assert created.status_code == 201, created.text
    body = {"id": "s-1", "type": "stop-snapshot", "data": {"type": "incremental", "data-collections": ["a.b"]}}
    sent = rest.http.post("/connectors/f/signals", json=body)
    assert sent.status_code == 202 and sent.json()["channel"] == "file", sent.text
    assert rest.http.post("/connectors/f/signals", json={"type": "resume-snapshot"}).status_code == 202
    first, second = (json.loads(line) for line in path.read_text().splitlines())
    assert first == body
    assert second["type"] == "resume-snapshot" and second["data"] is None and len(second["id"]) == 36


def test_kafka_channel_writes_the_workers_log_keyed_by_topic_prefix(rest: Rest, mariadb_db: MariaDbServer) -> None:
    config = _stopped(mariadb_db, "k", signal__enabled__channels="kafka", topic__prefix="shop")
    created = rest.http.post("/connectors", json=config)
    assert created.status_code == 201, created.text
    data = {"data-collections": ["s.t"], "type": "blocking", "additional-conditions": [
        {"data-collection": "s.t", "filter": "SELECT * FROM s.t WHERE id > 5"}]}  # fmt: skip
    sent = rest.http.post("/connectors/k/signals", json={"id": "k1", "type": "execute-snapshot", "data": data})
    assert sent.status_code == 202 and sent.json()["destination"] == "topic shop-signal (key shop)", sent.text
    reader = TopicSignalLog(rest.worker.log, "shop-signal", "reader")
    try:
        ((key, value),) = reader.poll()
    finally:
        reader.close()
    assert key == b"shop" and json.loads(value or b"") == {"id": "k1", "type": "execute-snapshot", "data": data}


VALID = {"id": "x", "type": "execute-snapshot", "data": {"data-collections": ["a.b"], "type": "incremental"}}
# (field the message must name, how to break the body)
BREAKS: list[tuple[str, Any]] = [
    ("'type'", lambda b, junk: b.update(type=junk)),
    ("'type'", lambda b, junk: b.pop("type")),
    ("'id'", lambda b, junk: b.update(id=junk if not isinstance(junk, str) else "")),
    ("'data'", lambda b, junk: b.update(data=[junk])),
    ("'data.data-collections'", lambda b, junk: b["data"].update({"data-collections": junk})),
    ("'data.type'", lambda b, junk: b["data"].update(type=junk)),
    ("'data.additional-conditions'", lambda b, junk: b["data"].update({"additional-conditions": [junk]})),
    ("'channel'", lambda b, junk: b.update(channel=junk)),
    ("'colour'", lambda b, junk: b.update(colour=junk)),
]
JUNK = st.one_of(st.integers(), st.floats(allow_nan=False), st.booleans(), st.text(max_size=8).map(lambda s: s + "?"))


@pytest.fixture(scope="module")
def shared_rest(tmp_path_factory: pytest.TempPathFactory) -> Any:
    r = Rest(tmp_path_factory.mktemp("sig"))
    yield r
    r.close()


@seed(2202)
@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.sampled_from(BREAKS), junk=JUNK)
def test_a_bad_body_is_a_400_naming_its_field(shared_rest: Rest, which: tuple[str, Any], junk: Any) -> None:
    field, brk = which
    body = json.loads(json.dumps(VALID))
    brk(body, junk)
    r = shared_rest.http.post("/connectors/any/signals", json=body)
    assert r.status_code == 400, (body, r.text)
    message = _error(r)
    assert field in message and "\n" not in message, (body, message)


def test_signals_sit_behind_basic_auth_and_the_host_guard(mariadb_db: MariaDbServer, tmp_path: Path) -> None:
    creds = tmp_path / "credentials.properties"
    creds.write_text("admin=s3cret-22\n")
    path = tmp_path / "state" / "connectors" / "g" / "signals.jsonl"
    r = Rest(tmp_path, **{"rest.basic.auth.credentials.file": str(creds)})
    try:
        auth = ("admin", "s3cret-22")
        config = _stopped(mariadb_db, "g", signal__enabled__channels="file", signal__file=str(path))
        assert r.http.post("/connectors", json=config, auth=auth).status_code == 201
        body = {"type": "pause-snapshot"}
        assert r.http.post("/connectors/g/signals", json=body).status_code == 401
        assert r.http.post("/connectors/g/signals", json=body, auth=("admin", "no")).status_code == 401
        assert (
            r.http.post("/connectors/g/signals", json=body, auth=auth, headers={"Host": "evil.example"}).status_code
            == 421
        )
        cross = r.http.post("/connectors/g/signals", json=body, auth=auth, headers={"Origin": "https://evil.example"})
        assert cross.status_code == 403
        assert not path.exists()
        assert r.http.post("/connectors/g/signals", json=body, auth=auth).status_code == 202
        assert len(path.read_text().splitlines()) == 1
    finally:
        r.close()


def test_the_postgres_plugin_writes_the_signal_table_with_the_connectors_settings(postgres_db: Any) -> None:
    """The source channel's delivery for PostgreSQL (the REST action and `cdc signal` share it)."""
    from cdc.runtime.signal_delivery import Signal, deliver, table_writer_for
    from cdc_postgres.connector import PostgresConnector
    from tests.postgres.harness import connector_props as pg_props

    with postgres_db.connect(autocommit=True) as conn:
        conn.execute("CREATE TABLE public.sig (id varchar(42) PRIMARY KEY, type varchar(32), data varchar(2048))")
    config = pg_props(postgres_db, signal__data__collection="public.sig")
    signal = Signal("pg-1", "execute-snapshot", {"data-collections": ["public.t"]})

    def no_log() -> Any:
        raise AssertionError("the source channel opens no log")

    where = deliver(config, signal, table_writer=table_writer_for(PostgresConnector), topic_log=no_log)
    assert where == "signal table public.sig"
    with postgres_db.connect(autocommit=True) as conn:
        rows = conn.execute("SELECT id, type, data FROM public.sig").fetchall()
    assert rows == [("pg-1", "execute-snapshot", json.dumps({"data-collections": ["public.t"]}))]
    config["database.password"] = "wrong-" + str(random.Random(5).random())
    config["database.user"] = "nobody_here"
    with pytest.raises(Exception) as refused:
        deliver(config, signal, table_writer=table_writer_for(PostgresConnector), topic_log=no_log)
    message = str(refused.value)
    assert "public.sig" in message and "\n" not in message, message
