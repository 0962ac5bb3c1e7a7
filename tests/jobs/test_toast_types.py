"""Unchanged TOASTed values of every TOASTable column type: the real PostgreSQL connector →
the Spark sink → Delta and the PostgreSQL warehouse (and, for the default placeholder, Delta
soft-delete, SCD2 and Iceberg), row for row equal to the source, no placeholder in any cell.

Why: under REPLICA IDENTITY DEFAULT an UPDATE leaves unchanged out-of-line values out, and
the connector writes `unavailable.value.placeholder` there in the column's own form, which
depends on the column type and on the connector's hstore/binary/decimal handling modes and
the placeholder itself (text, or `hex:` bytes). The sink must recognise each real form and
keep the value: from the key's earlier events in the same micro-batch (run 1) or from the
row the target stores (run 2). Only the real connector shows the real forms, so its events
feed the sink here. Run 2 also moves a row to a new key (`d` + `c`: the `c` carries the
placeholder too) and a numeric of 4,000 digits is TOASTed like the rest: both are limits the
comparison leaves out (see the test's docstring).

Harness: the connector tasks run in-process (a standalone herder writing the embedded log,
as `cdc run` does) and the sink runs as `start_query(..., available_now=True)` in one
SparkSession, several connector settings and both targets per table, to stay within the
suite's time; tests/jobs/test_toast_unchanged.py covers the same path through `cdc run`.
"""

from __future__ import annotations

import base64
import decimal
import hashlib
import json
import os
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from deltalake import DeltaTable
from psycopg.rows import dict_row

from cdc.log.base import TopicLog
from cdc.runtime.plugins import PluginRegistry
from cdc.runtime.standalone import StandaloneHerder
from cdc.runtime.transport import open_log, open_offset_store, open_status_store
from cdc.runtime.worker import Worker
from cdc.runtime.worker_config import WorkerConfig
from cdc_spark.pipeline import start_query
from tests.support.logs import topic_records

pytestmark = pytest.mark.slow  # Spark and a real PostgreSQL: `pytest -m 'not slow'` for a quick local run

# Every column but the key and qty is kept out of line (SET STORAGE EXTERNAL) with > 2 KB.
TOAST = ("tx", "vc", "ba", "jb", "js", "xm", "ta", "ia", "na", "nf", "ua", "hs", "nu", "bo", "f8", "bya")
DDL = """CREATE TABLE docs (
  id int PRIMARY KEY, qty int NOT NULL,
  tx text, vc varchar(20000), ba bytea, jb jsonb, js json, xm xml,
  ta text[], ia int4[], na numeric[], nf numeric(12,2)[], ua uuid[], hs hstore,
  nu numeric, bo bool[], f8 float8[], bya bytea[])"""
# How the source is read for the comparison (json/xml/hstore as text, uuids as text).
SOURCE_SELECT = (
    "SELECT id, qty, tx, vc, ba, jb::text AS jb, js::text AS js, xm::text AS xm, ta, ia, na, nf, "
    "ua::text[] AS ua, hstore_to_json(hs)::text AS hs, nu, bo, f8, bya FROM docs"
)
CASTS = {
    "jb": "::jsonb",
    "js": "::json",
    "xm": "::xml",
    "ta": "::text[]",
    "ia": "::int4[]",
    "na": "::numeric[]",
    "nf": "::numeric(12,2)[]",
    "ua": "::uuid[]",
    "nu": "::numeric",
    "bo": "::bool[]",
    "f8": "::float8[]",
    "bya": "::bytea[]",
}
FIXED_SCALE = {"nf": 2}  # numeric(12,2)[]: Decimal elements travel as unscaled bytes
_EXACT = decimal.Context(prec=20_000)


@dataclass(frozen=True)
class Modes:
    """A connector's settings that shape the values (and so the placeholder)."""

    hstore: str = "json"
    binary: str = "bytes"
    decimal: str = "precise"


@dataclass(frozen=True)
class Case:
    """One sink placeholder: the connectors (topic prefix → modes) that share it, and the targets."""

    placeholder: str | None  # None: Debezium's default, not set on either side
    connectors: dict[str, Modes]
    targets: tuple[str, ...] = ("delta", "postgres")


CASES = {
    "default-placeholder": Case(
        None,
        {"dflt": Modes(), "alt": Modes(hstore="map", binary="base64", decimal="double")},
        ("delta", "postgres", "delta-soft", "scd2", "iceberg"),
    ),
    "text-placeholder": Case("«unchanged»", {"txt": Modes(hstore="json", binary="hex", decimal="string")}),
    "hex-placeholder": Case("hex:ff7ffe", {"hexp": Modes(hstore="map", binary="bytes", decimal="precise")}),
}


# -- source values ------------------------------------------------------------------------------
def _hex(seed: str, n: int) -> str:
    """`n` characters of md5 hex, unique per seed."""
    return "".join(hashlib.md5(f"{seed}:{k}".encode()).hexdigest() for k in range(n // 32 + 1))[:n]


def _bytes(seed: str, n: int) -> bytes:
    """`n` bytes of sha256 output (zeros and high bytes included)."""
    return b"".join(hashlib.sha256(f"{seed}:{k}".encode()).digest() for k in range(n // 32 + 1))[:n]


def _value(col: str, i: int, v: int) -> Any:
    """Version `v` of column `col` in row `i`: > 2 KB, unique per (column, row, version)."""
    s = f"{col}.{i}.{v}"
    match col:
        case "tx" | "vc":
            return f"{s} ü€ " + _hex(s, 3000)
        case "ba":
            return _bytes(s, 3000)
        case "jb":
            return json.dumps({"row": i, "v": v, "price": "1.50", "n": [1.5, -2, 3e-7], "pad": _hex(s, 3000)})
        case "js":
            return f'{{ "row" : {i},  "v": {v}, "pad" : "{_hex(s, 3000)}" , "x" : [1.50, true, null] }}'
        case "xm":
            return f'<doc row="{i}" v="{v}"><p>{_hex(s, 3000)}</p><q a="&amp;"/></doc>'
        case "ta":
            return [f'"q",{{{k}}} ü {_hex(f"{s}.{k}", 30)}' for k in range(80)]
        case "ia":
            return [(i * 100_000 + k * 37 + v) * (-1) ** k for k in range(1000)]
        case "na":
            return [decimal.Decimal(k * 13 + i + v) / decimal.Decimal(7) for k in range(300)]
        case "nf":
            return [decimal.Decimal(f"{k * i + v}.{k % 100:02d}") for k in range(500)]
        case "ua":
            return [uuid.UUID(hashlib.md5(f"{s}.{k}".encode()).hexdigest()) for k in range(200)]
        case "hs":
            pairs = {f"k{k}": f'{s}.{k} =>"{_hex(f"{s}.{k}", 12)}' for k in range(150)}
            return {**pairs, "gone": None}
        case "nu":
            # 4,000 digits: ~2 KB, out of line. (Above 4,300 the connector fails in precise mode:
            # Python's int-from-text limit in cdc/api/data/logical.py, reported separately.)
            return decimal.Decimal(f"{i}{v}" + "7" * 3990 + ".25")
        case "bo":
            return [(k * i + v) % 3 == 0 for k in range(3000)]
        case "f8":
            return [(k * i + v) / 7 for k in range(500)]
        case "bya":
            return [_bytes(f"{s}.a", 1500), _bytes(f"{s}.b", 1500)]
    raise AssertionError(col)


def _sql(col: str, value: Any) -> tuple[str, list[Any]]:
    """The SQL expression (and its parameters) that writes `value` into `col`."""
    if col == "hs":
        return "hstore(%s::text[], %s::text[])", [list(value), list(value.values())]
    return "%s" + CASTS.get(col, ""), [value]


def _insert(sql: psycopg.Connection, i: int, v: int) -> int:
    parts = [_sql(c, _value(c, i, v)) for c in TOAST]
    params: list[Any] = [i, i]
    for _, p in parts:
        params += p
    sql.execute(f"INSERT INTO docs VALUES (%s, %s, {', '.join(e for e, _ in parts)})", params)
    return 1


def _set(sql: psycopg.Connection, i: int, v: int, *cols: str) -> int:
    """Give columns `cols` of row `i` their version `v`: every other TOAST column is left out."""
    parts = [(c, *_sql(c, _value(c, i, v))) for c in cols]
    params = [p for _, _, ps in parts for p in ps]
    sql.execute(f"UPDATE docs SET {', '.join(f'{c} = {e}' for c, e, _ in parts)} WHERE id = %s", [*params, i])
    return 1


def _bump(sql: psycopg.Connection, *ids: int) -> int:
    """An update of qty only: every TOAST column is left out of the event."""
    return sql.execute("UPDATE docs SET qty = qty + 1000 WHERE id = ANY(%s)", (list(ids),)).rowcount


def _run1(sql: psycopg.Connection) -> int:
    """Streamed after the snapshot, applied in the same micro-batch as the snapshot's rows; the
    number of change events."""
    n = _bump(sql, 1, 2)  # values from the `r` events
    n += _insert(sql, 5, 0) + _insert(sql, 6, 0)
    n += _bump(sql, 5) + _bump(sql, 5)  # two placeholders in a row: values from the `c` event
    # Different updates leave different columns out: tx from the first, ia/hs from the second,
    # the rest from the `r` event.
    n += _set(sql, 3, 1, "tx") + _set(sql, 3, 1, "ia", "hs") + _bump(sql, 3)
    return n


def _run2(sql: psycopg.Connection) -> int:
    """Streamed after run 1 was applied: values from the stored rows, or from this batch."""
    n = _bump(sql, 1, 4, 6)  # all from the stored rows (1 was itself filled in run 1)
    n += _set(sql, 2, 1, "jb") + _bump(sql, 2)  # jb from the batch, the rest stored
    n += _set(sql, 3, 2, "ua", "bya")  # tx/ia/hs stored from run 1's updates
    n += sql.execute("DELETE FROM docs WHERE id = 5").rowcount
    n += _insert(sql, 5, 3) + _bump(sql, 5)  # the re-inserted values, not the stored ones
    with sql.transaction():  # one commit: the two events share their commit LSN
        n += _insert(sql, 7, 0) + _bump(sql, 7)
    n += sql.execute("UPDATE docs SET vc = NULL WHERE id = 4").rowcount + _bump(sql, 4)  # a real NULL stays
    n += 2 * sql.execute("UPDATE docs SET id = 8 WHERE id = 6").rowcount  # a key change: d for 6, c for 8
    return n


# -- canonical values ---------------------------------------------------------------------------
def _items(value: Any) -> Any:
    """Arrays and maps: the sinks store JSON text; events and the source hold lists and dicts."""
    return json.loads(value) if isinstance(value, str) else value


def _binary(value: Any, mode: str) -> bytes:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if mode == "hex":
        return bytes.fromhex(value)
    return base64.b64decode(value)  # base64 mode, or bytes inside JSON (JsonConverter's base64)


def _number(value: Any, modes: Modes, scale: int | None = None) -> Any:
    """A numeric element or value as an exact Decimal (a float in double mode)."""
    if value is None:
        return None
    if isinstance(value, dict):  # io.debezium.data.VariableScaleDecimal
        unscaled = int.from_bytes(base64.b64decode(value["value"]), "big", signed=True)
        value = decimal.Decimal(unscaled).scaleb(-int(value["scale"]), _EXACT)
    elif isinstance(value, str) and scale is not None and modes.decimal == "precise":
        unscaled = int.from_bytes(base64.b64decode(value), "big", signed=True)  # Connect Decimal
        value = decimal.Decimal(unscaled).scaleb(-scale, _EXACT)
    elif isinstance(value, str):
        value = decimal.Decimal(value)
    if modes.decimal == "double":
        return float(value)
    return value if isinstance(value, decimal.Decimal) else decimal.Decimal(repr(value))


def canon(col: str, modes: Modes, value: Any) -> Any:
    """One comparable value per logical value, from the source, an event or a target cell (a
    value not of the column's type, such as a placeholder left in a JSON column, as it is)."""
    try:
        return _canon(col, modes, value)
    except (ValueError, TypeError, KeyError, ArithmeticError):
        try:
            return ("not of the column's type:", _items(value))
        except ValueError:
            return ("not of the column's type:", value)


def _canon(col: str, modes: Modes, value: Any) -> Any:
    if value is None:
        return None
    match col:
        case "ba":
            return _binary(value, modes.binary)
        case "jb" | "js":
            return json.loads(value, parse_float=decimal.Decimal)
        case "hs":
            return _items(value)
        case "ta" | "ia" | "bo":
            return _items(value)
        case "ua":
            return [str(u).lower() for u in _items(value)]
        case "na" | "nf":
            return [_number(x, modes, FIXED_SCALE.get(col)) for x in _items(value)]
        case "nu":
            return _number(value, modes)
        case "f8":
            return [float(x) for x in _items(value)]
        case "bya":
            return [_binary(x, modes.binary) for x in _items(value)]
    return value  # text, varchar, xml


def _show(value: Any) -> str:
    text = repr(value)
    return (
        text
        if len(text) <= 90
        else f"{text[:70]}… ({len(text)} chars, md5 {hashlib.md5(text.encode()).hexdigest()[:8]})"
    )


# -- the pipeline -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    """One local SparkSession for the module (a session another module started is reused, not stopped)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # Spark's workers need this interpreter
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    existing = SparkSession.getActiveSession()
    session = existing or (
        SparkSession.builder.master("local[2]")
        .appName("cdc-toast-types")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.python.worker.reuse", "true")
        .config("spark.sql.streaming.noDataMicroBatches.enabled", "false")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    if existing is None:
        session.stop()


@contextmanager
def _connectors(state: Path, server: Any, case: Case) -> Iterator[tuple[StandaloneHerder, TopicLog]]:
    """The case's PostgreSQL connectors in a standalone worker writing the embedded log at `state`."""
    config = WorkerConfig({"transport": "embedded", "state.dir": str(state), "embedded.synchronous": "NORMAL"})
    log_ = open_log(config)
    worker = Worker(
        config, PluginRegistry.discover(), log_, open_offset_store(config, log_), open_status_store(config, log_), "w"
    )
    herder = StandaloneHerder(worker)
    herder.start()
    try:
        for prefix, modes in case.connectors.items():
            props = {
                "name": prefix,
                "connector.class": "PostgresConnector",
                "database.hostname": server.host,
                "database.port": str(server.port),
                "database.user": server.user,
                "database.password": server.password,
                "database.dbname": server.dbname,
                "topic.prefix": prefix,
                "slot.name": f"toast_{prefix}",
                "publication.name": f"toast_{prefix}",
                "table.include.list": "public.docs",
                "poll.interval.ms": "50",
                "hstore.handling.mode": modes.hstore,
                "binary.handling.mode": modes.binary,
                "decimal.handling.mode": modes.decimal,
            }
            if case.placeholder is not None:
                props["unavailable.value.placeholder"] = case.placeholder
            herder.put_connector_config(props)
        yield herder, log_
    finally:
        herder.stop()


def _events(log_: TopicLog, prefix: str) -> list[dict[str, Any]]:
    """The change events' payloads on the connector's topic (tombstones left out)."""
    return [json.loads(r.value)["payload"] for r in topic_records(log_, f"{prefix}.public.docs") if r.value]


def _wait_events(herder: StandaloneHerder, log_: TopicLog, case: Case, count: int) -> None:
    deadline = time.monotonic() + 90
    while True:
        counts = {p: len(_events(log_, p)) for p in case.connectors}
        if all(n >= count for n in counts.values()):
            assert all(n == count for n in counts.values()), counts
            return
        if time.monotonic() > deadline:
            status = {p: herder.worker.status_store.get_task(p, 0) for p in case.connectors}
            pytest.fail(f"expected {count} events per topic, have {counts}; tasks: {status}")
        time.sleep(0.1)


def _catalog(tmp_path: Path) -> dict[str, str]:
    return {"uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}/warehouse"}


def _sink(target: str, tmp_path: Path, server: Any, case: Case) -> dict[str, Any]:
    names = {f"{p}.public.docs": f"{p}_docs" for p in case.connectors}
    sink: dict[str, Any] = {"table.names": names, "app.id": f"toast-{target}"}
    if target == "postgres":
        sink.update(target="postgres", dsn=server.dsn, schema="lake")
    elif target == "iceberg":
        (tmp_path / "warehouse").mkdir(exist_ok=True)
        sink.update(target="iceberg", catalog=_catalog(tmp_path), namespace="lake")
    else:
        sink.update(target="delta", path=str(tmp_path / target))
        sink.update({"delta-soft": {"delete.mode": "soft"}, "scd2": {"mode": "scd2"}}.get(target, {}))
    if case.placeholder is not None:  # `cdc run` copies the source's setting (jobs/run.py)
        sink["unavailable.value.placeholder"] = case.placeholder
    return sink


def _apply(spark: Any, tmp_path: Path, server: Any, case: Case) -> None:
    """Each target catches up with the log: one available-now query per target."""
    source = {"state.dir": str(tmp_path / "state"), "topic.pattern": rf"({'|'.join(case.connectors)})\.public\.docs"}
    for target in case.targets:
        sink = _sink(target, tmp_path, server, case)
        query = start_query(spark, source, sink, str(tmp_path / f"ckpt-{target}"), available_now=True)
        query.awaitTermination(180)
        if query.exception() is not None:
            raise AssertionError(f"{target} sink failed: {query.exception()}")


def _target_rows(target: str, tmp_path: Path, server: Any, prefix: str) -> list[dict[str, Any]]:
    """Every row of the target table, soft-deleted rows and closed SCD2 versions included."""
    table = f"{prefix}_docs"
    if target == "postgres":
        with psycopg.connect(server.dsn, row_factory=dict_row) as conn:
            rows = conn.execute(f"SELECT * FROM lake.{table}").fetchall()
    elif target == "iceberg":
        from pyiceberg.catalog.sql import SqlCatalog

        catalog = SqlCatalog("cdc", **_catalog(tmp_path))
        rows = catalog.load_table(("lake", table)).scan().to_arrow().to_pylist()
    else:
        rows = DeltaTable(str(tmp_path / target / table)).to_pyarrow_table().to_pylist()
    return rows


@dataclass(frozen=True)
class Wrong:
    """A target cell that differs from the source after a run, or a history row's cell that holds
    the placeholder."""

    run: str
    prefix: str
    target: str
    id: int
    col: str
    got: Any  # canonical
    want: Any
    placeholder: bool  # the cell holds what the connector sent for "unchanged"


@dataclass
class Outcome:
    case: Case
    forms: dict[str, dict[str, Any]]  # per topic prefix, what the connector sent for each unchanged column
    wrong: list[Wrong]

    def check(self, cells: list[Wrong]) -> None:
        """Fail with one line per run, topic, rows, targets and kind of wrong value."""
        if not cells:
            return
        groups: dict[tuple[str, str, bool, tuple[int, ...], str], list[Wrong]] = {}
        by_cell: dict[tuple[str, str, str, bool], list[Wrong]] = {}
        for w in cells:
            by_cell.setdefault((w.run, w.prefix, w.col, w.placeholder), []).append(w)
        for (run, prefix, _, held), ws in by_cell.items():
            ids = tuple(sorted({w.id for w in ws}))
            targets = ", ".join(dict.fromkeys(w.target for w in ws))
            groups.setdefault((run, prefix, held, ids, targets), []).extend(ws)
        lines = []
        for (run, prefix, held, ids, targets), ws in groups.items():
            m = self.case.connectors[prefix]
            cols = list(dict.fromkeys(w.col for w in ws))
            head = f"{run}, {prefix} (hstore {m.hstore}, binary {m.binary}, decimal {m.decimal}), ids {list(ids)}, "
            head += f"in {targets}: column(s) {', '.join(cols)}"
            if not held:
                lines.append(f"{head}: wrong value, e.g. {_show(ws[0].got)} (source {_show(ws[0].want)})")
                continue
            sent = "; ".join(f"{c}: {json.dumps(self.forms[prefix].get(c), ensure_ascii=False)[:120]}" for c in cols)
            lines.append(f"{head}: hold the connector's placeholder (it sent {sent})")
        pytest.fail("\n".join(lines), pytrace=False)


def _wrong_cells(tmp_path: Path, server: Any, case: Case, forms: dict[str, dict[str, Any]], run: str) -> list[Wrong]:
    with server.connect(row_factory=dict_row) as conn:
        source = {r["id"]: r for r in conn.execute(SOURCE_SELECT).fetchall()}
    out: list[Wrong] = []
    for prefix, modes in case.connectors.items():
        unsent = {c: canon(c, modes, f) for c, f in forms[prefix].items() if f is not None}
        for target in case.targets:
            rows = _target_rows(target, tmp_path, server, prefix)
            live = [r for r in rows if not r.get("__deleted") and r.get("__valid_to") is None]
            stored = {r["id"]: r for r in live}
            for i in sorted(set(stored) ^ set(source)):
                out.append(Wrong(run, prefix, target, i, "id", i in stored, i in source, False))
            for i in sorted(set(stored) & set(source)):
                for col in ("qty", *TOAST):
                    got, want = canon(col, modes, stored[i][col]), canon(col, modes, source[i][col])
                    if got != want:
                        held = col in forms[prefix] and got == canon(col, modes, forms[prefix][col])
                        out.append(Wrong(run, prefix, target, i, col, got, want, held))
            for r in rows:  # history: closed SCD2 versions, soft-deleted rows
                if not any(r is x for x in live):
                    for col, form in unsent.items():
                        if canon(col, modes, r[col]) == form:
                            out.append(Wrong(f"{run} (history row)", prefix, target, r["id"], col, form, None, True))
    return out


KEY_CHANGED = 8  # run 2 moves row 6 to key 8


@pytest.fixture(scope="module", params=list(CASES))
def outcome(request: Any, spark: Any, postgres: Any, tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    """The case's two runs through the real connector and every target, and the wrong cells after each."""
    case = CASES[request.param]
    tmp_path = tmp_path_factory.mktemp(request.param)
    with postgres.fresh_database() as server, server.connect() as sql:
        sql.execute("CREATE EXTENSION hstore")
        sql.execute(DDL)
        for col in TOAST:
            sql.execute(f"ALTER TABLE docs ALTER COLUMN {col} SET STORAGE EXTERNAL")  # out of line, uncompressed
        for i in range(1, 5):
            _insert(sql, i, 0)
        sizes = sql.execute(f"SELECT {', '.join(f'min(pg_column_size({c}))' for c in TOAST)} FROM docs").fetchone()
        assert min(sizes) > 2000, dict(zip(TOAST, sizes, strict=True))  # every value past the TOAST threshold

        with _connectors(tmp_path / "state", server, case) as (herder, log_):
            _wait_events(herder, log_, case, 4)  # the snapshot: what follows is streamed
            count = 4 + _run1(sql)
            _wait_events(herder, log_, case, count)
            # What the connector sends for "unchanged": the first qty-only update (row 1) has no TOAST value.
            forms = {}
            for prefix, modes in case.connectors.items():
                bump = next(e["after"] for e in _events(log_, prefix) if e["op"] == "u" and e["after"]["id"] == 1)
                forms[prefix] = {c: bump[c] for c in TOAST}
                sent = [c for c in TOAST if canon(c, modes, bump[c]) == canon(c, modes, _value(c, 1, 0))]
                assert sent == [], f"{prefix}: the update carried these values (stored inline?): {sent}"
            _apply(spark, tmp_path, server, case)
            wrong = _wrong_cells(tmp_path, server, case, forms, "run 1")

            count += _run2(sql)
            _wait_events(herder, log_, case, count)
            _apply(spark, tmp_path, server, case)
            wrong += _wrong_cells(tmp_path, server, case, forms, "run 2")
    return Outcome(case, forms, wrong)


def test_unchanged_values_of_every_type_are_kept(outcome: Outcome) -> None:
    """Each TOASTable type, in each form the connector's settings give its placeholder.

    Left out, as limits stated in plugins/spark/README.md: a scalar numeric (the connector, as
    Debezium, has no placeholder for it in decimal.handling.mode precise or double and sends
    null) and a row moved to a new key (its `c` lacks the values, which only the old key has)."""
    outcome.check([w for w in outcome.wrong if w.col != "nu" and w.id != KEY_CHANGED])
