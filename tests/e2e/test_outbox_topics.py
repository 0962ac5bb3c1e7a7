"""The outbox pattern end to end (issue 23): an outbox table in MariaDB (the MySQL connector) or
PostgreSQL (the PostgreSQL connector), the connector under `cdc standalone` with Debezium's outbox
EventRouter (io.debezium.transforms.outbox.EventRouter), the embedded log, and the per-aggregate
topics read back with `cdc topics read`.

Two connectors read the same outbox table:

- `plain`: the documented defaults (route.by.field=aggregatetype,
  route.topic.replacement=outbox.event.${routedByValue}), `type` and `tenant` placed as headers,
  route.tombstone.on.empty.payload=true: the value is the payload column as it is;
- `expanded`: route.topic.replacement=expanded.${routedByValue}, table.expand.json.payload=true,
  `type` and `seq` placed in the envelope: the value is {"payload": <the JSON, expanded>, ...}.

The rows are random (seeded; CDC_OUTBOX_SEED replays a run): unicode, JSON, empty, blank, NULL and
very long payloads, some written before the connector starts (snapshot) and the rest while it
streams, with updates and deletes of outbox rows mixed in: Debezium drops both (a warning for an
update, table.op.invalid.behavior=warn), so only inserts are events. Each aggregate type's
events must be on its own topic, keyed by aggregateid, in insert order per key.
"""

from __future__ import annotations

import json
import os
import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from cdc.log.embedded import EmbeddedLog
from tests.mysql.harness import connector_props, execute
from tests.postgres.harness import connector_props as pg_connector_props
from tests.rig import MariaDbServer, PostgresServer
from tests.support.logs import topic_records
from tests.support.proc import CdcProcess, run_cdc, wait_for, write_props

SEED = int(os.environ.get("CDC_OUTBOX_SEED", random.randrange(2**32)))
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
AGGREGATE_TYPES = ["Order", "customer", "Invoice-Line", "audit_log", "Shipment"]
OUTBOX_DDL = """
CREATE TABLE outbox (
  id VARCHAR(36) NOT NULL PRIMARY KEY,
  aggregatetype VARCHAR(255) NOT NULL,
  aggregateid VARCHAR(255) NOT NULL,
  type VARCHAR(255) NOT NULL,
  payload LONGTEXT NULL,
  tenant VARCHAR(64) NOT NULL,
  seq INT NOT NULL
) DEFAULT CHARSET=utf8mb4
"""


@dataclass(frozen=True)
class Event:
    id: str
    aggregatetype: str
    aggregateid: str
    type: str
    payload: str | None
    tenant: str
    seq: int
    snapshot: bool


def _text(rng: random.Random, n: int) -> str:
    alphabet = "abcxyz ÄéøßЖж中文字😀🚀\"'\\{}[]:,\t\n"
    return "".join(rng.choice(alphabet) for _ in range(n))


def _document(rng: random.Random, depth: int = 0) -> dict[str, Any]:
    """A JSON object Debezium's JsonSchemaData expands without loss: no nulls, no empty arrays,
    homogeneous arrays (nulls and empty arrays are left out, by design; see _expanded)."""
    doc: dict[str, Any] = {}
    for i in range(rng.randint(1, 5)):
        kind = rng.choice(["str", "int", "big", "float", "bool", "array", "object"] if depth < 2 else ["str", "int"])
        name = f"f{i}_{rng.choice(['a', 'ü', '名'])}"
        doc[name] = {
            "str": lambda: _text(rng, rng.randint(0, 20)),
            "int": lambda: rng.randint(-(2**31), 2**31 - 1),
            "big": lambda: rng.choice([2**40, -(2**53)]),
            "float": lambda: rng.choice([1.5, -0.25, 3.0e10]),
            "bool": lambda: rng.random() < 0.5,
            "array": lambda: [rng.randint(0, 9) for _ in range(rng.randint(1, 4))],
            "object": lambda: _document(rng, depth + 1),
        }[kind]()
    return doc


def _payload(rng: random.Random) -> str | None:
    kind = rng.choice(["json", "json", "json-nulls", "text", "empty", "blank", "null", "long", "long-json", "bad-json"])
    if kind == "json":
        return json.dumps(_document(rng), ensure_ascii=rng.random() < 0.5)
    if kind == "json-nulls":
        return json.dumps({**_document(rng), "gone": None, "none_here": []})
    if kind == "text":
        return "x" + _text(rng, rng.randint(1, 40))  # starts with no { or [: never expanded
    if kind == "empty":
        return ""
    if kind == "blank":
        # Java's String.trim() strips only chars <= U+0020: a no-break or ideographic space is content.
        return rng.choice([" ", "\t\n ", "\r", "\x01", "\u00a0", " \u3000 "])
    if kind == "null":
        return None
    if kind == "long":
        return "L" + _text(rng, rng.randint(70_000, 120_000))
    if kind == "long-json":
        return json.dumps({"items": [_text(rng, 50) for _ in range(2000)], "n": 1})
    return "{not json " + _text(rng, 5)


def _events(rng: random.Random, types: list[str], n: int, start: int, snapshot: bool) -> list[Event]:
    out = []
    for i in range(n):
        agg = rng.choice(types)
        out.append(
            Event(
                id=str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                aggregatetype=agg,
                aggregateid=f"{agg[:3].lower()}-{rng.choice(['ñ', 'k', '東'])}-{rng.randrange(4)}",
                type=rng.choice(["Created", "Änderung", "Shipped"]) + agg,
                payload=_payload(rng),
                tenant=f"tenant-{rng.choice(['ä', 'b', '東'])}",
                seq=start + i,
                snapshot=snapshot,
            )
        )
    return out


def _write(db: Database, rng: random.Random, events: list[Event], written: list[Event], updates: list[int]) -> None:
    """Insert `events` in random transactions, with updates and deletes of earlier rows between.

    While the connector streams, an insert is the event and later updates and deletes change
    nothing (`updates[0]` counts the updates it must warn about). Before it starts, the snapshot
    reads the rows as they are at the end: updated payloads, deleted rows gone.
    """
    snapshot = events[0].snapshot
    with db.connect() as conn, conn.cursor() as cur:
        i = 0
        while i < len(events):
            for e in events[i : i + rng.randint(1, 6)]:
                cur.execute(
                    "INSERT INTO outbox VALUES (%s, %s, %s, %s, %s, %s, %s)",
                    (e.id, e.aggregatetype, e.aggregateid, e.type, e.payload, e.tenant, e.seq),
                )
                written.append(e)
                i += 1
            if rng.random() < 0.3:
                at = rng.randrange(len(written))
                payload = f'{{"changed": {len(written)}}}'
                cur.execute("UPDATE outbox SET payload = %s WHERE id = %s", (payload, written[at].id))
                if snapshot:
                    written[at] = replace(written[at], payload=payload)
                else:
                    updates[0] += cur.rowcount
            if rng.random() < 0.3:
                at = rng.randrange(len(written))
                cur.execute("DELETE FROM outbox WHERE id = %s", (written[at].id,))
                if snapshot:
                    del written[at]
            conn.commit()


def _expanded(payload: str | None) -> Any:
    """What table.expand.json.payload makes of a payload: a JSON object without its null fields and
    empty arrays (table.json.payload.null.behavior=ignore, ...empty.array.behavior=ignore);
    anything not starting with { or [, or not JSON, unchanged."""
    if payload is None or not payload.startswith(("{", "[")):
        return payload
    try:
        doc = json.loads(payload)
    except ValueError:
        return payload
    return {k: v for k, v in doc.items() if v is not None and v != []}


def _read(worker: Path, topic: str) -> list[dict[str, Any]]:
    res = run_cdc("topics", "read", "--worker", str(worker), topic, "--from-beginning", timeout=120)
    assert res.returncode == 0, res.stderr
    return [json.loads(line) for line in res.stdout.splitlines()]


def _by_key(rows: list[Any], key: Any) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for r in rows:
        out.setdefault(key(r), []).append(r)
    return out


@dataclass(frozen=True)
class Database:
    """What the test needs of the source database: its outbox DDL, a transaction-mode connection,
    a connector's keys, and how to tell that a connector streams."""

    ddl: str
    connect: Callable[[], Any]
    connector: Callable[[str, Path], dict[str, object]]
    streaming: Callable[[CdcProcess], bool]
    schema_changes: bool  # MySQL writes DDL to the <topic.prefix> topic; PostgreSQL has none


def test_mariadb_outbox_rows_reach_per_aggregate_topics(mariadb_db: MariaDbServer, tmp_path: Path) -> None:
    def connector(prefix: str, tmp: Path) -> dict[str, object]:
        return {
            **connector_props(mariadb_db, topic__prefix=prefix),
            "table.include.list": f"{mariadb_db.database}.outbox",
            "schema.history.internal.file.filename": tmp / f"{prefix}-history.jsonl",
        }

    db = Database(
        OUTBOX_DDL,
        lambda: mariadb_db.connect(autocommit=False, charset="utf8mb4"),
        connector,
        lambda proc: proc.output().count("Streaming binlog from") == 2,
        schema_changes=True,
    )
    execute(mariadb_db, OUTBOX_DDL)
    _run_outbox(db, tmp_path)


def test_postgres_outbox_rows_reach_per_aggregate_topics(postgres_db: PostgresServer, tmp_path: Path) -> None:
    slots = {p: f"outbox_{p}_{uuid.uuid4().hex[:8]}" for p in ("plain", "expanded")}

    def connector(prefix: str, tmp: Path) -> dict[str, object]:
        return {
            **pg_connector_props(postgres_db, topic__prefix=prefix, slot__name=slots[prefix]),
            "table.include.list": "public.outbox",
        }

    def streaming(proc: CdcProcess) -> bool:
        with postgres_db.connect() as conn:
            rows = conn.execute("SELECT slot_name FROM pg_replication_slots WHERE active").fetchall()
        return set(slots.values()) <= {r[0] for r in rows}

    db = Database(
        OUTBOX_DDL.replace("LONGTEXT", "TEXT").replace(") DEFAULT CHARSET=utf8mb4", ")"),
        lambda: postgres_db.connect(autocommit=False),
        connector,
        streaming,
        schema_changes=False,
    )
    with postgres_db.connect() as conn:
        conn.execute(db.ddl)
    _run_outbox(db, tmp_path)


def _run_outbox(db: Database, tmp_path: Path) -> None:
    rng = random.Random(SEED)
    where = f"(seed {SEED}; CDC_OUTBOX_SEED={SEED} replays it)"
    types = rng.sample(AGGREGATE_TYPES, rng.randint(2, 4))
    before = _events(rng, types, rng.randint(5, 15), 0, snapshot=True)
    during = _events(rng, types, rng.randint(30, 60), len(before), snapshot=False)
    # The last write of each aggregate type is an insert: once it is on its topic, so is every
    # earlier change (one log, read in order).
    during += [
        Event(
            str(uuid.UUID(int=rng.getrandbits(128), version=4)), t, "last", "Last", "{}", "tenant-z", 10_000 + k, False
        )
        for k, t in enumerate(types)
    ]
    written: list[Event] = []
    updates = [0]
    _write(db, rng, before, written, updates)

    state = tmp_path / "state"
    state.mkdir()
    worker = write_props(
        tmp_path / "worker.properties",
        {"transport": "embedded", "state.dir": state, "num.partitions": 3, "offset.flush.interval.ms": 100,
         "listeners": "http://127.0.0.1:0"},
    )  # fmt: skip
    common = {
        "key.converter": JSON_CONVERTER,
        "key.converter.schemas.enable": "false",
        "value.converter": JSON_CONVERTER,
        "value.converter.schemas.enable": "false",
        "transforms": "outbox",
        "transforms.outbox.type": "io.debezium.transforms.outbox.EventRouter",
    }
    plain = {
        "name": "plain",
        **db.connector("plain", tmp_path),
        **common,
        "transforms.outbox.route.topic.replacement": "outbox.event.${routedByValue}",
        "transforms.outbox.table.fields.additional.placement": "type:header:eventType,tenant:header",
        "transforms.outbox.route.tombstone.on.empty.payload": "true",
    }
    expanded = {
        "name": "expanded",
        **db.connector("expanded", tmp_path),
        **common,
        "transforms.outbox.route.topic.replacement": "expanded.${routedByValue}",
        "transforms.outbox.table.expand.json.payload": "true",
        "transforms.outbox.table.fields.additional.placement": "type:envelope:eventType,seq:envelope",
    }
    proc = CdcProcess(
        "standalone",
        str(worker),
        str(write_props(tmp_path / "plain.properties", plain)),
        str(write_props(tmp_path / "expanded.properties", expanded)),
        log_path=tmp_path / "worker.log",
    )
    log_ = EmbeddedLog(state)
    try:
        wait_for(lambda: db.streaming(proc), 120, "both connectors streaming", proc)
        _write(db, rng, during, written, updates)

        def done() -> bool:
            return all(
                any(r.key == b'"last"' for r in topic_records(log_, f"{prefix}.{t}"))
                for t in types
                for prefix in ("outbox.event", "expanded")
            )

        wait_for(done, 180, f"the last event of each aggregate type {where}", proc)
    finally:
        log_.close()
        code = proc.terminate()
    output = (tmp_path / "worker.log").read_text(errors="replace")
    assert code == 0, output[-3000:]
    assert "Traceback" not in output, output[-3000:]
    # Updates of outbox rows are skipped with Debezium's warning (table.op.invalid.behavior=warn),
    # once per connector.
    assert output.count("Unexpected update message received") == 2 * updates[0], where

    res = run_cdc("topics", "list", "--worker", str(worker))
    assert res.returncode == 0, res.stderr
    listed = {line.split("\t")[0] for line in res.stdout.splitlines()}
    assert {t for t in listed if t.startswith(("outbox.event.", "expanded."))} == {
        f"{p}.{t}" for t in types for p in ("outbox.event", "expanded")
    }, where
    # Every change event was routed (or dropped): nothing on the table's own topic.
    assert not {t for t in listed if t.endswith(".outbox")}, listed
    if db.schema_changes:  # the schema change topic is not touched by the SMT (not an envelope)
        ddl = [r["value"] for r in _read(worker, "plain") if r["value"] is not None]
        assert any("CREATE TABLE" in str(v.get("ddl", "")) and "outbox" in str(v.get("ddl", "")) for v in ddl), ddl

    for agg in types:
        events = [e for e in written if e.aggregatetype == agg]
        for prefix in ("outbox.event", "expanded"):
            rows = _read(worker, f"{prefix}.{agg}")
            ids = [dict(r["headers"])["id"] for r in rows]
            assert sorted(ids) == sorted(e.id for e in events), (prefix, agg, where)
            _check_order(rows, events, where)
            for r, e in zip(rows, [next(e for e in events if e.id == i) for i in ids], strict=True):
                assert r["key"] == e.aggregateid, (e, where)
                assert r["timestamp"] > 0
                if prefix == "outbox.event":
                    blank = e.payload is None or all(c <= " " for c in e.payload)
                    assert r["value"] == (None if blank else e.payload), (e, where)
                    assert r["headers"] == [["id", e.id], ["eventType", e.type], ["tenant", e.tenant]], (e, where)
                else:
                    assert r["value"] == {"payload": _expanded(e.payload), "eventType": e.type, "seq": e.seq}, (
                        e,
                        where,
                    )
                    assert r["headers"] == [["id", e.id]], (e, where)


def _check_order(rows: list[dict[str, Any]], events: list[Event], where: str) -> None:
    """Per key (an aggregate instance; keys spread over 3 partitions), one partition and the
    insert order: the snapshot's rows first (in its scan order), then streamed rows as committed."""
    for key, key_rows in _by_key(rows, lambda r: r["key"]).items():
        assert len({r["partition"] for r in key_rows}) == 1, (key, where)
        ids = [dict(r["headers"])["id"] for r in key_rows]
        mine = [e for e in events if e.aggregateid == key]
        snap = [e.id for e in mine if e.snapshot]
        assert sorted(ids[: len(snap)]) == sorted(snap), (key, where)
        assert ids[len(snap) :] == [e.id for e in mine if not e.snapshot], (key, where)
