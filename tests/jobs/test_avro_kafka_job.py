"""Issue 20's acceptance, Kafka path: PostgreSQL → Kafka (Tansu) in Avro → Spark → Delta, equal to
the source row by row (read with deltalake).

On Kafka there is no embedded registry, so the job names one with transport.schema.registry.url.
The registry here is the project's own Schema Registry API, served by a `cdc standalone` worker on
the embedded transport in a temp dir (a real HTTP registry every process reaches: the connector's
AvroConverter registers through it, the Spark executors read ids from it; confluent-kafka's
`mock://` registry lives inside one process and could not be shared). A seeded random workload
with an ALTER TABLE mid-stream (a second, BACKWARD-compatible version of the value subject) runs
on a text-keyed and a composite-keyed table. Set CDC_AVRO_SEED to replay a workload.
"""

from __future__ import annotations

import decimal
import os
import random
from pathlib import Path

import httpx
import psycopg
import pytest
from deltalake import DeltaTable

from tests.postgres.harness import connector_props
from tests.security.rest_rig import free_port
from tests.support.proc import CdcProcess, run_cdc, wait_for

pytestmark = pytest.mark.slow  # a registry worker and two `cdc run`s, each starting Spark


def _job(tmp_path: Path, db, bootstrap: str, registry: str, prefix: str) -> Path:  # type: ignore[no-untyped-def]
    props = connector_props(db, topic__prefix=prefix, slot__name=prefix, slot__drop__on__stop="false")
    props["table.include.list"] = "public.items,public.pairs"
    source = "\n".join(f"  {k}: '{v}'" for k, v in props.items())
    job = tmp_path / "job.yaml"
    job.write_text(
        f"""name: {prefix}
source:
{source}
transport:
  type: kafka
  bootstrap.servers: {bootstrap}
  state.dir: {tmp_path / "state"}
  topic.partitions: 2
  format: avro
  schema.registry.url: {registry}
sink:
  type: delta
  path: {tmp_path / "lake"}
  tables:
    public.items: {{target: items}}
    public.pairs: {{target: pairs}}
spark:
  master: local[2]
"""
    )
    return job


def _round(conn: psycopg.Connection, rng: random.Random, n0: int, changes: int, altered: bool) -> None:
    with conn.cursor() as cur:
        for n in range(n0, n0 + changes):
            cur.execute("SELECT id FROM items")
            items = [r[0] for r in cur.fetchall()]
            cur.execute("SELECT a, b FROM pairs")
            pairs = list(cur.fetchall())
            kind = rng.choice(["insert", "insert", "update", "delete", "pk"])
            price = decimal.Decimal(rng.randint(-99999, 99999)) / 100
            if kind == "insert" or not items or not pairs:
                cur.execute(
                    "INSERT INTO items (id, qty, price) VALUES (%s, %s, %s)", (f"k{n}-ü", rng.randint(0, 9), price)
                )
                cur.execute(
                    "INSERT INTO pairs VALUES (%s, %s, %s) ON CONFLICT DO NOTHING", (rng.randint(1, 5), f"b{n % 6}", n)
                )
            elif kind == "update":
                note = f"n{n}" if altered and rng.random() < 0.6 else None
                sets = "qty = qty + 1, price = %s" + (", note = %s" if note else "")
                args = (price, note, rng.choice(items)) if note else (price, rng.choice(items))
                cur.execute(f"UPDATE items SET {sets} WHERE id = %s", args)
                a, b = rng.choice(pairs)
                cur.execute("UPDATE pairs SET v = v + 1 WHERE a = %s AND b = %s", (a, b))
            elif kind == "delete":
                cur.execute("DELETE FROM items WHERE id = %s", (rng.choice(items),))
                a, b = rng.choice(pairs)
                cur.execute("DELETE FROM pairs WHERE a = %s AND b = %s", (a, b))
            else:
                cur.execute("UPDATE items SET id = %s WHERE id = %s", (f"moved{n}", rng.choice(items)))


def _source(conn: psycopg.Connection, altered: bool) -> dict[str, dict]:
    with conn.cursor() as cur:
        cur.execute(f"SELECT id, qty, price, {'note' if altered else 'NULL'} FROM items")
        items = {r[0]: tuple(r[1:]) for r in cur.fetchall()}
        cur.execute("SELECT a, b, v FROM pairs")
        pairs = {(r[0], r[1]): r[2] for r in cur.fetchall()}
    return {"items": items, "pairs": pairs}


def _lake(tmp_path: Path) -> dict[str, dict]:
    items = [
        r for r in DeltaTable(str(tmp_path / "lake" / "items")).to_pyarrow_table().to_pylist() if not r["__deleted"]
    ]
    pairs = [
        r for r in DeltaTable(str(tmp_path / "lake" / "pairs")).to_pyarrow_table().to_pylist() if not r["__deleted"]
    ]
    out = {
        "items": {r["id"]: (r["qty"], r["price"], r.get("note")) for r in items},
        "pairs": {(r["a"], r["b"]): r["v"] for r in pairs},
    }
    assert len(out["items"]) == len(items) and len(out["pairs"]) == len(pairs), "a key is stored twice"
    return out


def test_postgres_to_kafka_in_avro_to_delta_equals_the_source(tmp_path: Path, postgres_db, tansu) -> None:  # type: ignore[no-untyped-def]
    seed = int(os.environ.get("CDC_AVRO_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    port = free_port()
    registry = f"http://127.0.0.1:{port}"
    worker = tmp_path / "registry.properties"
    worker.write_text(f"transport=embedded\nstate.dir={tmp_path / 'registry'}\nlisteners={registry}\n")
    serving = CdcProcess("standalone", str(worker), log_path=tmp_path / "registry.log")
    prefix = f"pgav{rng.randrange(1 << 30)}"
    conn = psycopg.connect(postgres_db.dsn, autocommit=True)
    try:

        def answers() -> bool:
            try:
                return httpx.get(registry + "/subjects", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        wait_for(answers, 60, "the registry API", serving)
        with conn.cursor() as cur:
            cur.execute("CREATE TABLE items (id TEXT PRIMARY KEY, qty INT NOT NULL, price NUMERIC(9,2))")
            cur.execute("CREATE TABLE pairs (a INT, b TEXT, v INT, PRIMARY KEY (a, b))")
        _round(conn, rng, 0, 12, False)
        job = _job(tmp_path, postgres_db, tansu.bootstrap, registry, prefix)
        res = run_cdc("validate", str(job), timeout=120)
        assert res.returncode == 0, res.stdout + res.stderr
        res = run_cdc("run", str(job), "--until-caught-up", timeout=420)
        assert res.returncode == 0, f"run 1, seed {seed}:\n{res.stderr[-4000:]}"
        assert _lake(tmp_path) == _source(conn, False), f"seed {seed}: the lake differs after run 1"
        _round(conn, rng, 100, 10, False)
        with conn.cursor() as cur:
            cur.execute("ALTER TABLE items ADD COLUMN note TEXT")
        _round(conn, rng, 200, 15, True)
        res = run_cdc("run", str(job), "--until-caught-up", timeout=420)
        assert res.returncode == 0, f"run 2, seed {seed}:\n{res.stderr[-4000:]}"
        final = _source(conn, True)
        assert _lake(tmp_path) == final and final["items"], f"seed {seed}: the lake differs after the ALTER"
        versions = httpx.get(f"{registry}/subjects/{prefix}.public.items-value/versions", timeout=5).json()
        assert versions == [1, 2], versions  # the ALTER registered a second, BACKWARD-compatible version
        res = run_cdc("verify", str(job), timeout=120)
        assert res.returncode == 0 and "0 differences" in res.stdout, f"seed {seed}: {res.stdout[-3000:]}"
    finally:
        with conn.cursor() as cur:  # the database is dropped after the test: its slot must go first
            cur.execute(
                "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s", (prefix,)
            )
        conn.close()
        assert serving.terminate() == 0, serving.output()[-3000:]
