"""`cdc plan job.yaml` without servers: the connectors' start decisions as the plan
restates them, the per-table rows, the traces of the captured tables in a constructed state.dir, that
nothing is written or locked, the command's exits, and a seeded random walk over include lists and
stored states (CDC_TEST_SEED replays a run; the seed is printed).

Against real MariaDB/PostgreSQL jobs: tests/jobs/test_plan_live.py.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cdc.api import ConnectException
from cdc.cli.plan import plan as plan_command
from cdc.jobs.load import load_job
from cdc.jobs.plan import (
    ADD,
    DROP,
    INCREMENTAL,
    INITIAL,
    KEEP,
    KEPT_POSITION,
    LOST_POSITION,
    MODES,
    MOVED_POSITION,
    NONE,
    Start,
    make_plan,
    mode_effects,
    next_start,
    render,
    stored_filters_capture,
    table_rows,
)
from cdc.jobs.plan_state import schema_change_tables, snapshot_history_tables
from cdc.log.base import TopicSpec
from cdc.runtime.state_lock import StateDirLock
from cdc.runtime.transport import open_log, open_offset_store
from cdc.runtime.worker_config import WorkerConfig
from cdc.storage.offsets import offset_key, offset_value

MYSQL_STREAMING = {"file": "mysql-bin.000003", "pos": 1547, "gtids": "0-1-9", "ts_sec": 1700000000}
MYSQL_SNAPSHOT = {
    **MYSQL_STREAMING,
    "snapshot": "INITIAL",
    "snapshot_tables_done": ["shop.a"],
    "snapshot_table": "shop.b",
}
PG_STREAMING = {"lsn": 123456, "lsn_commit": 123400, "lsn_proc": 123456, "txId": 7, "ts_usec": 1}
PG_SNAPSHOT = {"lsn": 100, "snapshot": True, "snapshot_tables_done": ["public.a"], "snapshot_table": "public.b"}


# -- the start decision ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("mode", "offset", "position", "kind"),
    [
        ("initial", None, None, "snapshot"),
        ("no_data", None, None, "schema_only"),
        ("recovery", None, None, "schema_only"),
        ("initial", MYSQL_STREAMING, None, "stream"),
        ("initial", MYSQL_STREAMING, KEPT_POSITION, "stream"),
        ("initial", MYSQL_STREAMING, MOVED_POSITION, "stream"),
        ("when_needed", MYSQL_STREAMING, MOVED_POSITION, "snapshot"),
        ("initial", MYSQL_STREAMING, LOST_POSITION, "fail"),
        ("when_needed", MYSQL_STREAMING, LOST_POSITION, "snapshot"),
        ("when_needed", MYSQL_STREAMING, None, "stream"),
        ("always", MYSQL_STREAMING, KEPT_POSITION, "snapshot"),
        ("initial_only", MYSQL_STREAMING, None, "idle"),
        ("no_data", MYSQL_STREAMING, None, "stream"),
        ("recovery", MYSQL_STREAMING, None, "recovery"),
        ("initial", MYSQL_SNAPSHOT, None, "resume"),
        ("initial", MYSQL_SNAPSHOT, MOVED_POSITION, "snapshot"),
        ("initial", {**MYSQL_STREAMING, "snapshot": "INITIAL"}, None, "snapshot"),  # no progress keys
        ("initial", {**MYSQL_STREAMING, "lineage_break": "RESET MASTER"}, None, "fail"),
        ("when_needed", {**MYSQL_STREAMING, "lineage_break": "RESET MASTER"}, None, "snapshot"),
    ],
)
def test_mysql_start(mode: str, offset: dict[str, Any] | None, position: str | None, kind: str) -> None:
    assert next_start("mysql", mode, offset, position).kind == kind


@pytest.mark.parametrize(
    ("mode", "offset", "position", "kind"),
    [
        ("initial", None, None, "snapshot"),
        ("no_data", None, None, "schema_only"),
        ("initial", PG_STREAMING, None, "stream"),
        ("initial", PG_STREAMING, LOST_POSITION, "fail"),
        ("when_needed", PG_STREAMING, LOST_POSITION, "snapshot"),
        ("always", PG_STREAMING, None, "snapshot"),
        ("initial_only", PG_STREAMING, None, "idle"),
        ("no_data", PG_STREAMING, None, "stream"),
        ("initial", PG_SNAPSHOT, None, "resume"),
        ("initial", {"lsn": 100, "snapshot": True}, None, "snapshot"),
        ("initial", {"lsn": 100, "snapshot": True, "last_snapshot_record": True}, None, "stream"),
    ],
)
def test_postgres_start(mode: str, offset: dict[str, Any] | None, position: str | None, kind: str) -> None:
    assert next_start("postgres", mode, offset, position).kind == kind


class _Connection:
    """What MySqlConnectorTask._plan asks the server, answered from the scenario."""

    def __init__(self, files: list[str], identity: str | None, at: tuple[str, int], executed: str) -> None:
        self.files, self.identity, self.at, self.executed = files, identity, at, executed

    def binlog_files(self) -> list[str]:
        return self.files

    def server_identity(self) -> str | None:
        return self.identity

    def master_status(self) -> tuple[str, int]:
        return self.at

    def executed_gtids(self, is_mariadb: bool) -> str:
        return self.executed

    def variable(self, name: str) -> str | None:
        # MariaDB's per-(domain, server_id) state: the one server's GTIDs, and no replica position.
        return {"gtid_binlog_state": self.executed, "gtid_slave_pos": ""}.get(name)


def _mysql_task_plan(mode: str, offset: dict[str, Any] | None, purged: bool) -> str:
    """The MySQL connector's own `_plan` on a task built without a server (its connection stubbed)."""
    from types import SimpleNamespace

    from cdc_mysql.offset_context import MySqlOffsetContext
    from cdc_mysql.task import MySqlConnectorTask

    task = MySqlConnectorTask.__new__(MySqlConnectorTask)
    task.config = SimpleNamespace(snapshot_mode=mode)  # type: ignore[assignment]
    task.is_mariadb = True
    task.connection = _Connection(  # type: ignore[assignment]
        [] if purged else ["mysql-bin.000003"], None, ("mysql-bin.000003", 9999), "0-1-9"
    )
    stored = MySqlOffsetContext.load(offset) if offset else None
    try:
        return task._plan(stored)
    except ConnectException:
        return "fail"


@pytest.mark.parametrize("mode", MODES["mysql"])
@pytest.mark.parametrize("offset", [None, MYSQL_STREAMING, MYSQL_SNAPSHOT, {**MYSQL_STREAMING, "gtids": None}])
@pytest.mark.parametrize("purged", [False, True])
def test_the_plan_decides_as_the_mysql_connector_does(mode: str, offset: dict[str, Any] | None, purged: bool) -> None:
    expected = _mysql_task_plan(mode, offset, purged)
    # What the plan hears from the connector's position_retention (plan._position): a purged file is
    # no loss to a GTID offset (resumed by GTID), but it moves it.
    position = None
    if offset is not None:
        position = (LOST_POSITION if not offset.get("gtids") else MOVED_POSITION) if purged else KEPT_POSITION
    assert next_start("mysql", mode, offset, position).kind == expected, (mode, offset, purged)


def test_mode_effects_mark_the_current_mode_and_say_what_becomes_of_the_offset() -> None:
    effects = {e.mode: e for e in mode_effects("mysql", "initial", MYSQL_STREAMING, None)}
    assert [e.mode for e in effects.values() if e.current] == ["initial"]
    assert effects["initial"].start == "stream" and effects["initial"].offsets.startswith("kept")
    assert effects["always"].snapshot == INITIAL and effects["always"].offsets.startswith("replaced")
    assert "turns out lost" in effects["when_needed"].offsets
    assert effects["initial_only"].start == "idle" and effects["recovery"].start == "recovery"
    lost = {e.mode: e for e in mode_effects("postgres", "initial", PG_STREAMING, LOST_POSITION)}
    assert lost["initial"].start == "fail" and lost["when_needed"].start == "snapshot"
    assert "slot is recreated" in lost["always"].offsets
    fresh = {e.mode: e for e in mode_effects("postgres", "initial", None, None)}
    assert "without streaming" in fresh["initial_only"].offsets and fresh["no_data"].snapshot == NONE


# -- rows ------------------------------------------------------------------------------------------
STREAM = Start("stream", "streams from the stored offset")


def _rows(**kw: Any) -> dict[str, Any]:
    args = {"start": STREAM, "offset": MYSQL_STREAMING, "new_tables": False, "offset_has_filters": False, **kw}
    return {r.table: r for r in table_rows(**args)}


def test_added_dropped_and_kept_tables() -> None:
    rows = _rows(captured_now=["shop.a", "shop.new"], captured_before={"shop.a": ["log topic"], "shop.old": ["x"]})
    assert (rows["shop.a"].action, rows["shop.a"].snapshot) == (KEEP, NONE)
    assert (rows["shop.new"].action, rows["shop.new"].snapshot) == (ADD, NONE)
    assert "without its existing rows" in rows["shop.new"].reason and "execute-snapshot" in rows["shop.new"].reason
    assert (rows["shop.old"].action, rows["shop.old"].snapshot) == (DROP, NONE)
    assert rows["shop.a"].stored_traces == ["log topic"]


def test_snapshot_new_tables_reads_added_tables_incrementally_only_with_stored_filters() -> None:
    args = {"captured_now": ["shop.a", "shop.new"], "captured_before": {"shop.a": ["offset filters"]}}
    rows = _rows(**args, new_tables=True, offset_has_filters=True)
    assert rows["shop.new"].snapshot == INCREMENTAL and rows["shop.a"].snapshot == NONE
    rows = _rows(**args, new_tables=True, offset_has_filters=False)
    assert rows["shop.new"].snapshot == NONE and "carries no filters" in rows["shop.new"].reason


def test_a_resumed_snapshot_reads_only_what_is_left() -> None:
    start = next_start("mysql", "initial", MYSQL_SNAPSHOT, None)
    rows = _rows(
        captured_now=["shop.a", "shop.b", "shop.c"],
        captured_before={"shop.a": ["x"]},
        start=start,
        offset=MYSQL_SNAPSHOT,
    )
    assert rows["shop.a"].snapshot == NONE and rows["shop.b"].snapshot == INITIAL and rows["shop.c"].snapshot == INITIAL
    assert "after its last key" in rows["shop.b"].reason


def test_a_running_incremental_snapshot_goes_on() -> None:
    offset = {
        **MYSQL_STREAMING,
        "incremental_snapshot_collections": json.dumps([{"incremental_snapshot_collections_id": "shop.a"}]),
    }
    rows = _rows(captured_now=["shop.a"], captured_before={"shop.a": ["x"]}, offset=offset)
    assert rows["shop.a"].snapshot == INCREMENTAL


def test_the_offset_filters_say_exactly_what_was_captured() -> None:
    offset = {**MYSQL_STREAMING, "table_include_list": ["shop\\.a", "shop\\.b"]}
    assert stored_filters_capture("mysql", offset, ["shop.a", "shop.b", "shop.c"]) == {"shop.a", "shop.b"}
    assert stored_filters_capture("mysql", MYSQL_STREAMING, ["shop.a"]) is None
    pg = {**PG_STREAMING, "schema_include_list": ["inv"]}
    assert stored_filters_capture("postgres", pg, ["inv.a", "public.a"]) == {"inv.a"}


# -- traces in the log -----------------------------------------------------------------------------
def _change(kind: str, table: str, snapshot: bool = False) -> dict[str, Any]:
    db, name = table.split(".")
    position = {"file": "f", "pos": 4, **({"snapshot": "INITIAL"} if snapshot else {})}
    return {"position": position, "tableChanges": [{"type": kind, "id": f'"{db}"."{name}"'}]}


def test_history_and_schema_change_traces() -> None:
    history = [
        _change("CREATE", "shop.a", True),
        _change("CREATE", "shop.b", True),
        _change("CREATE", "other.x"),  # streamed DDL of a table the job never captured
        _change("DROP", "shop.b"),
        _change("ALTER", "shop.a"),
    ]
    assert snapshot_history_tables(history) == ["shop.a"]
    assert schema_change_tables(
        [_change("CREATE", "shop.a"), _change("DROP", "shop.a"), _change("CREATE", "shop.c")]
    ) == ["shop.c"]


def _job(tmp_path: Path, include: str, **source: str) -> Path:
    extra = "".join(f"\n  {k}: '{v}'" for k, v in source.items())
    job = tmp_path / "job.yaml"
    job.write_text(
        f"""name: shop
source:
  connector.class: mysql
  database.hostname: 127.0.0.1
  database.port: 1
  database.user: cdc
  database.password: secret
  database.server.id: 77
  topic.prefix: srv
  table.include.list: '{include}'{extra}
transport:
  state.dir: {tmp_path / "state"}
sink:
  type: delta
  path: {tmp_path / "lake"}
"""
    )
    return job


def _event(table: str) -> bytes:
    db, name = table.split(".")
    return json.dumps({"schema": {}, "payload": {"op": "r", "source": {"db": db, "table": name}, "after": {}}}).encode()


def _stored(job_file: Path, offset: dict[str, Any] | None, topics: list[str], history: list[dict[str, Any]]) -> None:
    """What a run leaves: the offset, a topic per table with a change, the history topic."""
    job = load_job(job_file, inspect_only=True)
    config = WorkerConfig(job.worker_config())
    with open_log(config) as log_:
        store = open_offset_store(config, log_)
        store.start()
        if offset is not None:
            store.set({offset_key("shop", {"server": "srv"}): offset_value(offset)})
        store.stop()
        producer = log_.producer()
        for table in topics:
            log_.ensure_topic(TopicSpec(f"srv.{table}", 1))
            producer.send(f"srv.{table}", _event(table), key=b"k")
        if history:
            log_.ensure_topic(TopicSpec("schema-changes.srv", 1))
            for record in history:
                producer.send("schema-changes.srv", json.dumps(record).encode())
        producer.flush(10)


def _snapshot_of(path: Path) -> dict[str, tuple[int, int, bytes]]:
    """Every file under `path` with its size, mtime and bytes: what must stay as it was."""
    out = {}
    for p in sorted(path.rglob("*")):
        if p.is_file():
            out[str(p)] = (p.stat().st_size, p.stat().st_mtime_ns, p.read_bytes())
    return out


def test_plan_on_a_stored_state_adds_drops_and_keeps(tmp_path: Path) -> None:
    job = _job(tmp_path, "shop.a,shop.empty,shop.new")
    history = [_change("CREATE", t, True) for t in ("shop.a", "shop.empty", "shop.gone")]
    _stored(job, MYSQL_STREAMING, ["shop.a", "shop.gone"], history)
    # The last connection to close checkpoints SQLite's WAL into cdc.db (as after `cdc status`): once
    # that is done, a plan leaves every byte of the state.dir as it was.
    make_plan(load_job(job), offline=True)
    before = _snapshot_of(tmp_path / "state")
    result = make_plan(load_job(job), offline=True)
    rows = {r.table: r for r in result.tables}
    assert {t: r.action for t, r in rows.items()} == {
        "shop.a": KEEP, "shop.empty": KEEP, "shop.gone": DROP, "shop.new": ADD,
    }  # fmt: skip
    assert rows["shop.empty"].stored_traces == ["schema history"]  # no topic: it never had a row
    assert rows["shop.a"].stored_traces == ["log topic", "schema history"]
    assert all(r.snapshot == NONE for r in rows.values()) and result.start.kind == "stream"
    assert (rows["shop.new"].topic, rows["shop.new"].topic_created) == ("srv.shop.new", True)
    assert rows["shop.a"].topic_created is False and rows["shop.empty"].topic_created is True
    assert rows["shop.a"].target == "srv_shop_a" and rows["shop.a"].target_created is None  # --offline
    assert result.stored_sources == ["log topics", "schema history topic schema-changes.srv"]
    text = render(result)
    print(text)
    assert ["shop.new", "add", "none", "srv.shop.new", "yes"] in [line.split()[:5] for line in text.splitlines()]
    assert "initial (this job)" in text
    assert _snapshot_of(tmp_path / "state") == before  # nothing written


def test_plan_checks_delta_targets_unless_offline(tmp_path: Path) -> None:
    import pyarrow as pa
    from deltalake import write_deltalake

    job = _job(tmp_path, "shop.a,shop.b")
    _stored(job, MYSQL_STREAMING, ["shop.a"], [])
    write_deltalake(str(tmp_path / "lake" / "srv_shop_a"), pa.table({"id": [1]}))
    rows = {r.table: r for r in make_plan(load_job(job), offline=False).tables}  # the database: refused, said
    assert rows["shop.a"].target_created is False and rows["shop.b"].target_created is True


def test_always_snapshots_every_table_and_a_fresh_state_dir_stays_absent(tmp_path: Path) -> None:
    job = _job(tmp_path, "shop.a", **{"snapshot.mode": "always"})
    _stored(job, MYSQL_STREAMING, ["shop.a", "shop.b"], [])
    rows = {r.table: r for r in make_plan(load_job(job), offline=True).tables}
    assert rows["shop.a"].snapshot == INITIAL and "every start" in rows["shop.a"].reason
    assert (rows["shop.b"].action, rows["shop.b"].snapshot) == (DROP, NONE)

    fresh = tmp_path / "fresh"
    fresh.mkdir()
    result = make_plan(load_job(_job(fresh, "shop.a")), offline=True)
    assert result.stored_offset is None and [r.snapshot for r in result.tables] == [INITIAL]
    assert result.tables[0].topic_created is True and not (fresh / "state").exists()


def test_plan_beside_a_held_lock_reads_it_and_leaves_it_untouched(tmp_path: Path) -> None:
    job = _job(tmp_path, "shop.a")
    _stored(job, MYSQL_STREAMING, ["shop.a"], [])
    with StateDirLock.for_job(tmp_path / "state", "shop").acquire():
        lock = tmp_path / "state" / "cdc.lock"
        held = (lock.read_bytes(), lock.stat().st_mtime_ns)
        result = make_plan(load_job(job), offline=True)
        assert result.running and result.pid == os.getpid()
        assert "the job is running (pid" in render(result)
        assert (lock.read_bytes(), lock.stat().st_mtime_ns) == held


# -- the command -----------------------------------------------------------------------------------
def test_command_json_and_exit_codes(tmp_path: Path) -> None:
    job = _job(tmp_path, "shop.a")
    _stored(job, MYSQL_STREAMING, ["shop.a"], [])
    res = CliRunner().invoke(plan_command, [str(job), "--offline", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["version"] == 1 and doc["job"] == "shop" and doc["start"]["kind"] == "stream"
    assert [(t["table"], t["action"], t["snapshot"]) for t in doc["tables"]] == [("shop.a", "keep", "none")]
    assert [m["mode"] for m in doc["modes"] if m["current"]] == ["initial"]

    bad = _job(tmp_path, "shop.a", **{"snapshot.mode": "sometimes"})
    res = CliRunner().invoke(plan_command, [str(bad), "--offline"])
    assert res.exit_code == 2 and "Traceback" not in res.output
    (line,) = [ln for ln in res.output.splitlines() if ln.strip()]
    assert line.startswith("error: ") and "snapshot.mode" in line

    res = CliRunner().invoke(plan_command, [str(tmp_path / "missing.yaml")])
    assert res.exit_code == 2 and res.output.startswith("error: ")
    assert "--offline" in CliRunner().invoke(plan_command, ["--help"]).output


# -- a seeded random walk --------------------------------------------------------------------------
SEED = int(os.environ.get("CDC_TEST_SEED") or random.SystemRandom().randrange(2**32))


def test_random_include_lists_and_stored_states() -> None:
    """Any include lists, traces, offsets and modes: the rows are the union of both table sets, each
    action says which side holds the table, and the snapshot follows the start decision."""
    print(f"CDC_TEST_SEED={SEED}")
    rng = random.Random(SEED)
    why = f" (replay with CDC_TEST_SEED={SEED})"
    universe = [f"{db}.{t}" for db in ("shop", "inv", "x") for t in ("a", "b", "orders", "Items")]
    offsets: dict[str, list[dict[str, Any] | None]] = {
        "mysql": [None, MYSQL_STREAMING, MYSQL_SNAPSHOT, {**MYSQL_STREAMING, "lineage_break": "b"}],
        "postgres": [None, PG_STREAMING, PG_SNAPSHOT, {"lsn": 5, "snapshot": True}],
    }
    for _ in range(400):
        family = rng.choice(["mysql", "postgres"])
        mode = rng.choice(MODES[family])
        offset = rng.choice(offsets[family])
        now = rng.sample(universe, rng.randrange(len(universe) + 1))
        before = {t: ["log topic"] for t in rng.sample(universe, rng.randrange(len(universe) + 1))}
        if offset is not None and rng.random() < 0.3:
            offset = {**offset, "table_include_list": [rng.choice(universe).replace(".", "\\.")]}
            exact = stored_filters_capture(family, offset, set(now) | set(before))
            assert exact is not None, why
            before = {t: ["offset filters"] for t in exact}
        position = rng.choice([None, KEPT_POSITION, MOVED_POSITION, LOST_POSITION]) if offset else None
        new_tables = rng.random() < 0.5
        start = next_start(family, mode, offset, position)
        rows = table_rows(now, before, start, offset, new_tables, "table_include_list" in (offset or {}))
        assert [r.table for r in rows] == sorted(set(now) | set(before)), why
        for r in rows:
            assert r.action == (KEEP if r.table in now and r.table in before else ADD if r.table in now else DROP), why
            if r.action == DROP or start.kind in ("idle", "fail", "schema_only"):
                assert r.snapshot == NONE, (why, r, start)
            elif start.kind == "snapshot":
                assert r.snapshot == INITIAL, (why, r)
            elif start.kind in ("stream", "recovery") and r.action == KEEP:
                assert r.snapshot in (NONE, INCREMENTAL), (why, r)
            assert r.reason, why
        effects = mode_effects(family, mode, offset, position)
        assert [e.mode for e in effects if e.current] == [mode], why
        assert {e.mode: e.start for e in effects}[mode] == start.kind, why
        json.dumps([r.__dict__ for r in rows])
