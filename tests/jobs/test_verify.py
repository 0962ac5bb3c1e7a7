"""`cdc verify job.yaml`: source tables against sink tables, by key and row checksum.

One test runs the real pipeline (`cdc run --until-caught-up`, MariaDB → Delta) over many
column types and then breaks both sides; the others build the Delta table directly in the
sink's layout (typed columns + `__op`, `__seq`, `__source_ts_ms`, `__deleted`).
"""

from __future__ import annotations

import datetime
import decimal
import json
import socket
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner, Result
from deltalake import DeltaTable, write_deltalake

from cdc.cli.verify import verify
from cdc.jobs.verify.compare import TableResult, compare
from cdc.jobs.verify.normalize import Column, canon
from tests.mysql.harness import connector_props
from tests.support.proc import run_cdc

pytestmark = pytest.mark.slow  # a minute or more: `pytest -m 'not slow'` for a quick local run


def _verify(*args: str) -> Result:
    """In-process (the CLI's exit codes and output, without a Python start per call)."""
    return CliRunner().invoke(verify, ["--quiet", *args], catch_exceptions=False)


TYPES_DDL = """CREATE TABLE items (
  id INT PRIMARY KEY,
  name VARCHAR(40) NOT NULL,
  price DECIMAL(10,2),
  ratio DOUBLE,
  weight FLOAT,
  created DATETIME,
  created6 DATETIME(6),
  seen TIMESTAMP(3) NULL,
  day DATE,
  at_time TIME(6),
  data BLOB,
  fixed BINARY(4),
  status ENUM('new','paid','shipped'),
  tags SET('a','b','c'),
  doc JSON,
  flag TINYINT(1),
  bits BIT(5),
  big BIGINT UNSIGNED,
  yr YEAR,
  secret VARCHAR(10)
)"""


def _insert_items(cur, ids: range) -> None:
    rows = []
    for i in ids:
        null = i % 7 == 0  # every seventh row: the nullable columns are NULL
        rows.append(
            (
                i,
                f"item{i} ü",
                None if null else decimal.Decimal(f"{i}.25"),
                None if null else i / 3,
                None if null else i * 1.1,
                None if null else datetime.datetime(2024, 1, 2, 3, 4, 5) + datetime.timedelta(hours=i),
                None if null else datetime.datetime(2024, 5, 6, 7, 8, 9, 123456 + i),
                None if null else datetime.datetime(2024, 3, 1, 12, 0, 0, 500000),
                None if null else datetime.date(2020, 1, 1) + datetime.timedelta(days=i),
                None if null else datetime.timedelta(hours=1, seconds=i, microseconds=250),
                None if null else bytes([i % 256, 0, 255]),
                None if null else b"ab",
                None if null else ("new", "paid", "shipped")[i % 3],
                None if null else "a,c",
                None if null else json.dumps({"n": i, "x": [1.5, "y"], "ok": True}),
                None if null else i % 2,
                None if null else i % 32,
                None if null else 2**63 - i,
                None if null else 2000 + i % 50,
                "hidden",
            )
        )
    cur.executemany("INSERT INTO items VALUES (" + ", ".join(["%s"] * 20) + ")", rows)


def _mysql_job(tmp_path: Path, server, extra: str = "") -> Path:
    props = connector_props(server, **{"column__exclude__list": f"{server.database}.items.secret"})
    source = "\n".join(f"  {k}: '{v}'" for k, v in props.items())
    job = tmp_path / "job.yaml"
    job.write_text(
        f"""name: shop
source:
{source}
transport:
  state.dir: {tmp_path / "state"}
sink:
  type: delta
  path: {tmp_path / "lake"}
{extra}spark:
  master: local[2]
"""
    )
    return job


def test_verify_after_run_then_detects_differences(tmp_path: Path, mariadb_db) -> None:
    with mariadb_db.connect() as conn, conn.cursor() as cur:
        cur.execute(TYPES_DDL)
        _insert_items(cur, range(1, 41))
        cur.execute("CREATE TABLE notes (k VARCHAR(10) PRIMARY KEY, body TEXT)")
        cur.execute("INSERT INTO notes VALUES ('a', 'x'), ('b', NULL)")
    job = _mysql_job(tmp_path, mariadb_db)
    with mariadb_db.connect() as conn, conn.cursor() as cur:  # updated and deleted rows in the snapshot
        cur.execute("UPDATE items SET price = price + 1, doc = JSON_SET(doc, '$.n', 0) WHERE id <= 5")
        cur.execute("DELETE FROM items WHERE id = 40")
    res = run_cdc("run", str(job), "--until-caught-up", timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    with mariadb_db.connect() as conn, conn.cursor() as cur:
        cur.execute("INSERT INTO notes VALUES ('c', 'not yet in the lake')")  # after the run: missing

    db = mariadb_db.database
    res = _verify(str(job), "--table", f"{db}.items")
    assert res.exit_code == 0, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    lake = tmp_path / "lake" / f"dbserver1_{db}_items"
    assert lines[0] == f"{db}.items → {lake}: 39 source rows, 39 target rows, 0 differences"
    assert lines[1:] == [  # every column compared but the excluded one
        "  note: not captured (column include/exclude lists): secret",
        "1 tables verified: 0 differences",
    ]

    # Break both sides without running the pipeline.
    table = DeltaTable(str(lake))
    table.delete("id = 7")
    row = table.to_pyarrow_table(filters=[("id", "=", 8)])
    write_deltalake(str(lake), row.set_column(0, "id", pa.array([999], pa.int32())), mode="append")
    with mariadb_db.connect() as conn, conn.cursor() as cur:
        cur.execute("UPDATE items SET price = 1.5, day = '1999-12-31' WHERE id = 3")

    res = _verify(str(job))
    assert res.exit_code == 1, res.stdout + res.stderr
    out = res.stdout
    assert f"{lake}: 39 source rows, 39 target rows, 3 differences (1 missing in the target, 1 extra" in out
    assert "  changed: id=3: price: source 1.5, target 4.25; day: source 1999-12-31, target 2020-01-04" in out
    assert "  missing in the target: id=7" in out and "  extra in the target: id=999" in out
    assert f"{db}.notes → " in out and "3 source rows, 2 target rows, 1 differences" in out
    assert "  missing in the target: k=c" in out

    res = _verify(str(job), "--json", "--max-diffs", "1", "--table", f"{db}.notes")
    assert res.exit_code == 1
    doc = json.loads(res.stdout)
    assert doc["differences"] == 1
    assert doc["tables"][0]["samples"] == [{"kind": "missing", "key": {"k": "c"}}]


def _ship_to_delta(records: list, lake: Path) -> None:
    """What the Delta sink does with the connector's records (hard deletes), without Spark:
    JsonConverter → decode → latest per key → flatten → write."""
    from cdc.converters.json import JsonConverter
    from cdc_spark.apply.arrowutil import for_lake
    from cdc_spark.decode import decode_batches, flatten
    from cdc_spark.decode.events import keep_latest

    keys, values = JsonConverter(), JsonConverter()
    keys.configure({"schemas.enable": True}, is_key=True)
    values.configure({"schemas.enable": True}, is_key=False)
    batch = pa.RecordBatch.from_pydict(
        {
            "topic": [r.topic for r in records],
            "partition": pa.array([0] * len(records), pa.int32()),
            "offset": pa.array(range(len(records)), pa.int64()),
            "key": [keys.from_connect_data(r.topic, r.key_schema, r.key) for r in records],
            "value": [values.from_connect_data(r.topic, r.value_schema, r.value) for r in records],
        }
    )
    latest = keep_latest(pa.Table.from_batches(list(decode_batches(iter([batch])))))
    live = latest.filter(pa.compute.invert(latest.column("__deleted")))
    write_deltalake(str(lake), for_lake(flatten(records[0].topic, live).table))


def test_verify_values_that_came_through_the_binlog(tmp_path: Path, mariadb_db) -> None:
    from tests.mysql.harness import TaskRunner, execute

    execute(mariadb_db, TYPES_DDL, "CREATE TABLE marker (id INT PRIMARY KEY)", "INSERT INTO marker VALUES (1)")
    job = _mysql_job(tmp_path, mariadb_db)
    with TaskRunner(connector_props(mariadb_db, column__exclude__list=f"{mariadb_db.database}.items.secret")) as run:
        run.wait_data(1, "marker")  # the snapshot has read: what follows comes from the binlog
        with mariadb_db.connect() as conn, conn.cursor() as cur:
            _insert_items(cur, range(1, 31))
            cur.execute("UPDATE items SET price = price + 1, doc = JSON_SET(doc, '$.n', 0) WHERE id <= 5")
            cur.execute("DELETE FROM items WHERE id = 30")
        items = run.wait_data(30 + 5 + 1, "items")
    assert all(r.value.get("source").get("snapshot") in (None, "false") for r in items)
    _ship_to_delta(items, tmp_path / "lake" / f"dbserver1_{mariadb_db.database}_items")
    res = _verify(str(job), "--table", f"{mariadb_db.database}.items")
    assert res.exit_code == 0, res.stdout + res.stderr
    assert res.stdout.splitlines()[1:] == [  # every column compared but the excluded one
        "  note: not captured (column include/exclude lists): secret",
        "1 tables verified: 0 differences",
    ]
    assert res.stdout.startswith(f"{mariadb_db.database}.items → ")
    assert ": 29 source rows, 29 target rows, 0 differences" in res.stdout


def _pg_job(tmp_path: Path, server, tables: str = "", name: str = "bank", prefix: str = "bank") -> Path:
    job = tmp_path / "job.yaml"
    job.write_text(
        f"""name: {name}
source:
  connector.class: postgres
  database.hostname: {server.host}
  database.port: {server.port}
  database.user: {server.user}
  database.password: '{server.password}'
  database.dbname: {server.dbname}
  topic.prefix: {prefix}
transport:
  state.dir: {tmp_path / "state"}
sink:
  type: delta
  path: {tmp_path / "lake"}
{tables}"""
    )
    return job


def _meta(n: int, deleted: list[bool] | None = None) -> dict[str, pa.Array]:
    return {
        "__op": pa.array(["r"] * n),
        "__seq": pa.array([i.to_bytes(32, "big") for i in range(n)], pa.binary()),
        "__source_ts_ms": pa.array([0] * n, pa.int64()),
        "__deleted": pa.array(deleted or [False] * n),
    }


def test_verify_postgres_source_against_delta_built_in_the_sink_layout(tmp_path: Path, postgres_db) -> None:
    sql = postgres_db.connect()
    sql.execute(
        "CREATE TABLE accounts(id int PRIMARY KEY, owner text NOT NULL, balance numeric(12,2), "
        "opened timestamptz, born date, at time, tags text[], meta jsonb, raw bytea, rate real, note varchar(20))"
    )
    sql.execute(
        "INSERT INTO accounts VALUES (1, 'ann', 10.50, '2024-01-01 10:00:00+02', '1990-05-06', '12:30:00.5', "
        "'{a,b}', '{\"k\": 1.0, \"a\": [true]}', '\\x00ff', 1.1, 'x'), "
        "(2, 'bob', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), "
        "(3, 'cy', -3, '2024-06-01 00:00:00.123456+00', '2000-01-01', '00:00:01', '{}', '[]', '', 0, 'z')"
    )
    sql.execute("ALTER TABLE accounts ADD COLUMN tier int DEFAULT 1")  # fills old rows, emits no changes
    sql.execute("CREATE TABLE audit(id int PRIMARY KEY, what text)")
    sql.execute("INSERT INTO audit VALUES (1, 'x')")
    lake = tmp_path / "lake"
    # What the Delta sink stores for these rows (Debezium's types: MicroTime, ZonedTimestamp,
    # arrays and JSON as text); row 4 is soft-deleted and must not count.
    write_deltalake(
        str(lake / "bank_public_accounts"),
        pa.table(
            {
                "id": pa.array([1, 2, 3, 4], pa.int32()),
                "owner": ["ann", "bob", "cy", "gone"],
                "balance": pa.array(
                    [decimal.Decimal("10.50"), None, decimal.Decimal("-3.00"), None], pa.decimal128(12, 2)
                ),
                "opened": ["2024-01-01T08:00:00Z", None, "2024-06-01T00:00:00.123456Z", None],
                "born": pa.array([datetime.date(1990, 5, 6), None, datetime.date(2000, 1, 1), None], pa.date32()),
                "at": pa.array([45_000_500_000, None, 1_000_000, None], pa.int64()),
                "tags": ['["a","b"]', None, "[]", None],
                "meta": ['{"a":[true],"k":1.0}', None, "[]", None],
                "raw": pa.array([b"\x00\xff", None, b"", None], pa.binary()),
                "rate": pa.array([1.1, None, 0.0, None], pa.float32()),
                "note": ["x", None, "CHANGED", None],
                # The sink fills a column added with a DEFAULT in the rows stored before it.
                "tier": pa.array([1, 1, 1, None], pa.int32()),
                **_meta(4, [False, False, False, True]),
            }
        ),
    )
    job = _pg_job(tmp_path, postgres_db)
    res = _verify(str(job), "--json")
    assert res.exit_code == 1, res.stdout + res.stderr
    doc = json.loads(res.stdout)
    accounts, audit = doc["tables"]
    # Captured with rows, but the sink has no table for it: every row is missing.
    assert (audit["source"], audit["missing"], doc["not_checked"]) == ("public.audit", 1, [])
    assert (accounts["source_rows"], accounts["target_rows"], accounts["differences"]) == (3, 3, 1)
    assert accounts["samples"] == [
        {"kind": "changed", "key": {"id": "3"}, "columns": [{"column": "note", "source": "z", "target": "CHANGED"}]}
    ]

    res = _verify(str(job), "--table", "public.nope")
    assert res.exit_code == 2 and "--table public.nope: not a table of the job (known: public.accounts" in res.stderr

    sql.execute("UPDATE accounts SET note = 'CHANGED' WHERE id = 3")
    sql.execute("DELETE FROM audit")  # an empty table without a target is passed over
    res = _verify(str(job))
    assert res.exit_code == 0, res.stdout + res.stderr
    assert "public.accounts → " in res.stdout and ": 3 source rows, 3 target rows, 0 differences" in res.stdout
    assert "hold a column DEFAULT" not in res.stdout
    assert res.stdout.splitlines()[-2:] == [
        "not checked (no target table): public.audit",
        "1 tables verified: 0 differences",
    ]


def test_verify_scd2_current_versions_and_job_keys(tmp_path: Path, postgres_db) -> None:
    sql = postgres_db.connect()
    sql.execute("CREATE TABLE events(code text, n int, v text)")  # no primary key: the job names the keys
    sql.execute("INSERT INTO events VALUES ('a', 1, 'new'), ('b', 2, 'x')")
    history = {
        "code": ["a", "a", "b", "b"],
        "n": pa.array([1, 1, 2, 2], pa.int32()),
        "v": ["old", "new", "x", "x"],
        **_meta(4, [False, False, False, True]),
    }
    seqs = history["__seq"].to_pylist()
    history["__valid_from"] = pa.array(seqs, pa.binary())
    history["__valid_to"] = pa.array([seqs[1], None, seqs[3], None], pa.binary())
    write_deltalake(str(tmp_path / "lake" / "bank_public_events"), pa.table(history))
    job = _pg_job(tmp_path, postgres_db, "  tables:\n    public.events: {keys: [code, n], mode: scd2}\n")
    res = _verify(str(job))
    # 'b' was deleted in the history (its open version is a delete), so it is missing.
    assert res.exit_code == 1, res.stdout + res.stderr
    assert "2 source rows, 1 target rows, 1 differences (1 missing in the target)" in res.stdout
    assert "  missing in the target: code=b, n=2" in res.stdout


def test_unreachable_database_is_one_line_exit_2(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once the socket closes
    job = tmp_path / "job.yaml"
    job.write_text(
        f"""name: x
source:
  connector.class: mysql
  database.hostname: 127.0.0.1
  database.port: {port}
  database.user: u
  database.server.id: 7
  topic.prefix: p
sink:
  type: delta
  path: {tmp_path / "lake"}
"""
    )
    res = run_cdc("verify", str(job))
    assert res.returncode == 2
    assert res.stderr.startswith("error: cannot connect to the source database at 127.0.0.1:")
    assert res.stderr.count("\n") == 1
    res = _verify(str(tmp_path / "nope.yaml"))
    assert (res.exit_code, res.stderr.count("\n")) == (2, 1)
    assert "cannot read the job file" in res.stderr


def test_canonical_values_agree_across_engines() -> None:
    dec = Column("d", "decimal", "decimal(10,2)")
    assert canon(dec, decimal.Decimal("1.50")) == canon(dec, "1.5", True) == canon(dec, decimal.Decimal("1.5000"), True)
    vsd = '{"scale":2,"value":"AJY="}'  # VariableScaleDecimal: 150 scaled by 2
    assert canon(dec, vsd, True) == "1.5"
    dbl = Column("d", "decimal", "decimal(30,20)", decimal_mode="double")
    assert canon(dbl, decimal.Decimal("0.10000000000000000555")) == canon(dbl, 0.1, True)
    tz = Column("t", "timestamptz", "timestamptz")
    plus2 = datetime.timezone(datetime.timedelta(hours=2))
    assert canon(tz, datetime.datetime(2024, 1, 1, 10, tzinfo=plus2)) == canon(tz, "2024-01-01T08:00:00Z", True)
    ms = Column("t", "datetime", "datetime(3)", unit="ms")
    assert canon(ms, datetime.datetime(2024, 1, 1, 0, 0, 0, 123456)) == canon(ms, 1704067200123, True)
    t = Column("t", "time", "time")
    assert canon(t, datetime.timedelta(hours=25)) == canon(t, 90_000_000_000, True)
    b64 = Column("b", "bytes", "blob", binary_mode="base64")
    assert canon(b64, b"\x00\xff") == canon(b64, "AP8=", True)
    bits = Column("b", "bits", "bit(12)")
    assert canon(bits, b"\x01\x02") == canon(bits, b"\x02\x01", True)  # driver big-endian, Debezium little-endian
    f32 = Column("f", "float32", "float")
    assert canon(f32, 3.14159) == canon(f32, 3.141592741, True)
    js = Column("j", "json", "json")
    assert canon(js, '{"b": 1.0, "a": [1, null]}') == canon(js, '{"a":[1,null],"b":1}', True)
    zero = Column("z", "date", "date", nullable=False)
    assert canon(zero, "0000-00-00") == canon(zero, datetime.date(1970, 1, 1), True)


def test_compare_counts_duplicates_and_samples_in_key_order() -> None:
    cols = [Column("id", "int", "int"), Column("v", "text", "text", default="d")]
    source = [(1, "a"), (2, "b"), (3, "d"), (4, "x"), (4, "x")]
    target = [(1, "a"), (2, "B"), (2, "b"), (3, None), (5, "e")]
    r = compare(TableResult("s.t", "t"), cols, ["id"], lambda: iter(source), lambda: iter(target), 10)
    # The sink's tables hold a column's DEFAULT in the rows stored before it was added: NULL differs.
    assert (r.source_rows, r.target_rows, r.missing, r.extra, r.changed, r.duplicates) == (5, 5, 1, 1, 1, 1)
    assert [(d.kind, d.key["id"]) for d in r.samples] == [
        ("duplicate", "2"),
        ("changed", "3"),
        ("missing", "4"),
        ("extra", "5"),
    ]
    assert r.samples[1].columns == [("v", "d", None)]
    assert any("occur more than once in the source" in n for n in r.notes)
    assert not any("hold a column DEFAULT" in n for n in r.notes)
    # A changelog (the Parquet target) keeps only events: the DEFAULT in the source counts as equal.
    r = compare(
        TableResult("s.t", "t"), cols, ["id"], lambda: iter(source), lambda: iter(target), 10, unfilled_defaults=True
    )
    assert (r.missing, r.extra, r.changed, r.duplicates) == (1, 1, 0, 1)
    assert any("1 row(s) hold a column DEFAULT" in n for n in r.notes)


def _envelope(op: str, row: dict | None, before: dict | None = None) -> str:
    return json.dumps({"before": before, "after": row, "op": op, "source": {"lsn": 1}, "ts_ms": 0})


def test_verify_postgres_iceberg_and_parquet_sinks(tmp_path: Path, postgres_db) -> None:
    from pyiceberg.catalog.sql import SqlCatalog

    sql = postgres_db.connect()
    sql.execute("CREATE TABLE t(id int PRIMARY KEY, v text)")
    sql.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b2')")
    tables = "  tables:\n    public.t: {keys: [id]}\n"
    rows = {"id": pa.array([1, 2, 3], pa.int32()), "v": ["a", "b2", "c"], **_meta(3, [False, False, True])}

    # PostgreSQL warehouse sink: <schema>.<prefix>_<schema>_<table>, soft-deleted row 3.
    sql.execute("CREATE SCHEMA lake")
    sql.execute(
        "CREATE TABLE lake.bank_public_t(id int PRIMARY KEY, v text, __op text, __seq bytea, "
        "__source_ts_ms bigint, __deleted boolean)"
    )
    sql.execute(
        "INSERT INTO lake.bank_public_t VALUES (1, 'a', 'r', '', 0, false), (2, 'b', 'r', '', 0, false), "
        "(3, 'c', 'd', '', 0, true)"
    )
    job = _pg_job(tmp_path, postgres_db, tables).read_text()
    pg_job = tmp_path / "pg.yaml"
    pg_job.write_text(job.replace("  type: delta\n", f"  type: postgres\n  dsn: {postgres_db.dsn}\n  schema: lake\n"))
    res = _verify(str(pg_job))
    assert res.exit_code == 1, res.stdout + res.stderr
    assert "public.t → lake.bank_public_t: 2 source rows, 2 target rows, 1 differences (1 changed)" in res.stdout
    assert "  changed: id=2: v: source b2, target b" in res.stdout

    # Iceberg: the SQL catalog under sink.path, namespace `cdc`.
    warehouse = tmp_path / "ice"
    warehouse.mkdir()
    catalog = SqlCatalog("cdc", uri=f"sqlite:///{warehouse}/catalog.db", warehouse=f"file://{warehouse}")
    catalog.create_namespace("cdc")
    catalog.create_table(("cdc", "bank_public_t"), schema=pa.table(rows).schema).append(pa.table(rows))
    ice_job = tmp_path / "ice.yaml"
    ice_job.write_text(job.replace("type: delta", "type: iceberg").replace(str(tmp_path / "lake"), str(warehouse)))
    res = _verify(str(ice_job))
    assert res.exit_code == 0, res.stdout + res.stderr
    assert "public.t → cdc.bank_public_t: 2 source rows, 2 target rows, 0 differences" in res.stdout

    # Parquet changelog: every event; a key's current row is its latest event (id 3 ends deleted).
    events = [
        ("c", {"id": 1}, {"id": 1, "v": "a"}, None),
        ("c", {"id": 2}, {"id": 2, "v": "b"}, None),
        ("u", {"id": 2}, {"id": 2, "v": "b2"}, None),
        ("c", {"id": 3}, {"id": 3, "v": "c"}, None),
        ("d", {"id": 3}, None, {"id": 3, "v": "c"}),
    ]
    part = tmp_path / "pq" / "batch_id=0" / "topic=bank.public.t"
    part.mkdir(parents=True)
    import pyarrow.parquet as pq

    pq.write_table(
        pa.table(
            {
                "partition": pa.array([0] * 5, pa.int32()),
                "offset": pa.array(range(5), pa.int64()),
                "key": [json.dumps(k) for _, k, _, _ in events],
                "value": [_envelope(op, after, before) for op, _, after, before in events],
                "__op": [op for op, *_ in events],
                "__seq": pa.array([i.to_bytes(32, "big") for i in range(5)], pa.binary()),
                "__source_ts_ms": pa.array([0] * 5, pa.int64()),
                "__deleted": [op == "d" for op, *_ in events],
            }
        ),
        part / "part-0.parquet",
    )
    pq_job = tmp_path / "pq.yaml"
    pq_job.write_text(job.replace("type: delta", "type: parquet").replace(str(tmp_path / "lake"), str(tmp_path / "pq")))
    res = _verify(str(pq_job))
    assert res.exit_code == 0, res.stdout + res.stderr
    assert "public.t → " in res.stdout and ": 2 source rows, 2 target rows, 0 differences" in res.stdout
