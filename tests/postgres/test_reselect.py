"""Unchanged TOASTed values of a primary-key change are re-selected from the table.

Under the default REPLICA IDENTITY, an UPDATE that changes the primary key arrives as a delete
of the old key and a create of the new one. pgoutput leaves the unchanged TOASTed columns of
the new row out ('u') and the old row holds only the key, so nothing in the WAL carries those
values: the connector re-reads them from the table by the new key. The value it reads is the
row's current one, at least as new as the event; a row already gone keeps Debezium's
placeholder, and the change that removed it follows. These tests drive the real connector
with seeded random workloads and replay its events as a sink does: the result must equal the
table, so no create may carry a placeholder a later event does not correct.
"""

from __future__ import annotations

import base64
import json
import logging
import random
import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import psycopg
import pytest

from cdc.api import ConfigException
from cdc_debezium.naming import TopicNamingStrategy
from cdc_postgres.config import PostgresConnectorConfig, validate
from cdc_postgres.pgoutput import UNCHANGED_TOAST
from cdc_postgres.reselect import APPLICATION_NAME, ColumnReselector, ReselectSettings
from cdc_postgres.schema import PostgresSchema
from cdc_postgres.value_converters import PostgresValueConverters
from tests.postgres.test_connector import _failed_trace, _streaming, herder, values, wait_until  # noqa: F401
from tests.support.logs import topic_records

PLACEHOLDER = "__debezium_unavailable_value"
PER_BYTE = [ord(c) for c in PLACEHOLDER]  # an int array's placeholder: one element per byte
ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
BLOBS = "srv.public.blobs"
PAIRS = "srv.public.pairs"
DONE = "srv.public.done"

# Placeholder of each toasted column as the JSON converter writes it (bytes are base64).
_PLACEHOLDERS: dict[str, Any] = {
    "body": PLACEHOLDER,
    "raw": base64.b64encode(PLACEHOLDER.encode()).decode(),
    "doc": PLACEHOLDER,
    "tags": [PLACEHOLDER],
    "nums": PER_BYTE,
    "note": PLACEHOLDER,
}


def _text(rng: random.Random, n: int | None = None) -> str:
    """Random text that pglz cannot compress: over 2 KB, it is stored out of line."""
    return "".join(rng.choices(ALPHABET, k=n or rng.randint(2_500, 6_000)))


def _blob_values(rng: random.Random) -> tuple[Any, ...]:
    """(qty, body, raw, doc, tags, nums): every toastable column over 2 KB and incompressible."""
    return (
        rng.randint(0, 1000),
        _text(rng),
        rng.randbytes(rng.randint(2_500, 5_000)),
        json.dumps({"k": _text(rng), "n": rng.randint(0, 99)}),
        [_text(rng, 700) for _ in range(5)],
        [rng.getrandbits(62) for _ in range(rng.randint(350, 600))],
    )


def _create_tables(sql: psycopg.Connection) -> None:
    sql.execute(
        "CREATE TABLE blobs(id int PRIMARY KEY, qty int NOT NULL, body text, raw bytea, doc jsonb, tags text[],"
        " nums int8[])"
    )
    # A composite key with a text part; its body is stored out of line uncompressed.
    sql.execute("CREATE TABLE pairs(k text, n int, qty int NOT NULL, note text NOT NULL, PRIMARY KEY (k, n))")
    sql.execute("ALTER TABLE pairs ALTER COLUMN note SET STORAGE EXTERNAL")
    sql.execute("CREATE TABLE done(id int PRIMARY KEY)")
    for t in ("blobs", "pairs"):
        assert sql.execute(f"SELECT relreplident FROM pg_class WHERE oid = '{t}'::regclass").fetchone() == ("d",)


def _check_toasted(sql: psycopg.Connection) -> None:
    """Every stored value of the toastable columns is over 2 KB and uncompressed: out of line."""
    rows = sql.execute(
        "SELECT min(least(pg_column_size(body), pg_column_size(raw), pg_column_size(doc), pg_column_size(tags),"
        " pg_column_size(nums))), bool_or(coalesce(pg_column_compression(body), pg_column_compression(raw),"
        " pg_column_compression(doc), pg_column_compression(tags), pg_column_compression(nums)) IS NOT NULL)"
        " FROM blobs"
    ).fetchone()
    assert rows[0] is None or (rows[0] > 2_000 and not rows[1]), rows


@dataclass
class Workload:
    """A seeded random sequence of transactions on blobs and pairs, keeping track of the keys."""

    rng: random.Random
    sql: psycopg.Connection
    ids: set[int] = field(default_factory=set)
    pairs: set[tuple[str, int]] = field(default_factory=set)
    next_id: int = 1
    kinds: list[str] = field(default_factory=list)

    def fresh_id(self) -> int:
        self.next_id += self.rng.randint(1, 3)
        return self.next_id

    def insert(self, tx: psycopg.Connection) -> None:
        i = self.fresh_id()
        tx.execute("INSERT INTO blobs VALUES (%s, %s, %s, %s, %s, %s, %s)", (i, *_blob_values(self.rng)))
        self.ids.add(i)

    def insert_pair(self, tx: psycopg.Connection) -> None:
        k = (self.rng.choice(["a", "b", "long key é"]), self.rng.randint(1, 10_000))
        if k in self.pairs:
            return
        tx.execute("INSERT INTO pairs VALUES (%s, %s, %s, %s)", (*k, self.rng.randint(0, 9), _text(self.rng)))
        self.pairs.add(k)

    def pick(self) -> int:
        return self.rng.choice(sorted(self.ids))

    def move(self, tx: psycopg.Connection, old: int, also_qty: bool = False) -> int:
        new = self.fresh_id()
        extra = ", qty = qty + 1" if also_qty else ""
        tx.execute(f"UPDATE blobs SET id = %s{extra} WHERE id = %s", (new, old))
        self.ids.discard(old)
        self.ids.add(new)
        return new

    def step(self, kind: str) -> None:
        """One transaction of the given kind."""
        self.kinds.append(kind)
        with self.sql.transaction():
            tx = self.sql
            if len(self.ids) < 3 or kind == "insert":
                self.insert(tx)
                return
            match kind:
                case "pk_change":
                    self.move(tx, self.pick(), also_qty=self.rng.random() < 0.5)
                case "pk_chain":  # several key changes of one row in one transaction
                    i = self.pick()
                    for _ in range(self.rng.randint(2, 4)):
                        i = self.move(tx, i)
                case "pk_then_delete":
                    i = self.move(tx, self.pick())
                    tx.execute("DELETE FROM blobs WHERE id = %s", (i,))
                    self.ids.discard(i)
                case "pk_then_toast_update":
                    i = self.move(tx, self.pick())
                    column, value = self.rng.choice([("body", _text(self.rng)), ("raw", self.rng.randbytes(3_000))])
                    tx.execute(f"UPDATE blobs SET {column} = %s WHERE id = %s", (value, i))
                case "pk_then_plain_update":
                    i = self.move(tx, self.pick())
                    tx.execute("UPDATE blobs SET qty = qty + 7 WHERE id = %s", (i,))
                case "pk_with_new_body":  # the new row carries its body; the other columns are unchanged
                    old, new = self.pick(), self.fresh_id()
                    tx.execute("UPDATE blobs SET id = %s, body = %s WHERE id = %s", (new, _text(self.rng), old))
                    self.ids = (self.ids - {old}) | {new}
                case "multi_pk":  # one statement moves several rows
                    chosen = self.rng.sample(sorted(self.ids), min(len(self.ids), self.rng.randint(2, 5)))
                    if any(i + 1_000_000 in self.ids for i in chosen):
                        return
                    tx.execute("UPDATE blobs SET id = id + 1000000 WHERE id = ANY(%s)", (chosen,))
                    self.ids = (self.ids - set(chosen)) | {i + 1_000_000 for i in chosen}
                case "pk_back":  # a key that was used and deleted before comes back
                    i = self.pick()
                    old = self.rng.randint(1, self.next_id)
                    if old not in self.ids:
                        tx.execute("UPDATE blobs SET id = %s WHERE id = %s", (old, i))
                        self.ids.discard(i)
                        self.ids.add(old)
                case "null_then_pk":  # a NULL is not toasted: nothing to re-select for it
                    i = self.pick()
                    tx.execute("UPDATE blobs SET doc = NULL WHERE id = %s", (i,))
                    self.move(tx, i)
                case "plain_update":
                    tx.execute("UPDATE blobs SET qty = qty + 1 WHERE id = %s", (self.pick(),))
                case "toast_update":
                    tx.execute(
                        "UPDATE blobs SET tags = %s WHERE id = %s",
                        ([_text(self.rng, 800) for _ in range(3)], self.pick()),
                    )
                case "delete":
                    i = self.pick()
                    tx.execute("DELETE FROM blobs WHERE id = %s", (i,))
                    self.ids.discard(i)
                case "pair_key_change":
                    if not self.pairs:
                        self.insert_pair(tx)
                        return
                    k, n = self.rng.choice(sorted(self.pairs))
                    new = (self.rng.choice(["a", "b", "c d", "ü"]), n + self.rng.randint(1, 50) * 20_000)
                    if new in self.pairs:
                        return
                    tx.execute("UPDATE pairs SET k = %s, n = %s WHERE k = %s AND n = %s", (*new, k, n))
                    self.pairs.discard((k, n))
                    self.pairs.add(new)
                case "pair_insert":
                    self.insert_pair(tx)
                case other:
                    raise AssertionError(other)


KINDS = [
    "pk_change",
    "pk_chain",
    "pk_then_delete",
    "pk_then_toast_update",
    "pk_then_plain_update",
    "pk_with_new_body",
    "multi_pk",
    "pk_back",
    "null_then_pk",
    "plain_update",
    "toast_update",
    "delete",
    "insert",
    "pair_key_change",
    "pair_insert",
]


def run_workload(rng: random.Random, sql: psycopg.Connection, steps: int) -> Workload:
    """Rows to start with, every kind once, then `steps` random kinds."""
    work = Workload(rng, sql)
    for _ in range(6):
        work.step("insert")
        work.step("pair_insert")
    for kind in rng.sample(KINDS, len(KINDS)):
        work.step(kind)
    for _ in range(steps):
        work.step(rng.choice(KINDS))
    return work


def _finish(sql: psycopg.Connection, h) -> None:
    """Commit a marker row and wait until its event is in the log: every change before it is too."""
    sql.execute("INSERT INTO done VALUES (1)")
    wait_until(lambda: len(values(h, DONE)) >= 1, timeout=120, what="the marker row's event")


def _is_placeholder(column: str, value: Any) -> bool:
    return column in _PLACEHOLDERS and value == _PLACEHOLDERS[column]


def _key(topic: str, row: dict[str, Any]) -> Any:
    return row["id"] if topic == BLOBS else (row["k"], row["n"])


@dataclass
class Replay:
    """The table as a sink rebuilds it from the events: an update's placeholder keeps the stored value."""

    rows: dict[Any, dict[str, Any]] = field(default_factory=dict)
    key_change_creates: int = 0  # creates of a key change that needed a value pgoutput did not send
    transient: list[tuple[Any, str]] = field(default_factory=list)  # creates left with a placeholder


def replay(h, topic: str, every_event: bool = False) -> Replay:
    """Rebuild the table from the topic. A create (with `every_event`: any event) may keep a
    placeholder only if a later event deletes its key."""
    out = Replay()
    records = [r for r in topic_records(h.worker.log, topic) if r.value is not None]
    events = [(json.loads(r.value)["payload"], dict(r.headers or [])) for r in records]
    for n, (e, headers) in enumerate(events):
        op, after = e["op"], e["after"]
        row = after or e["before"]
        key = _key(topic, row)
        if op == "d":
            out.rows.pop(key, None)
            continue
        holes = [c for c, v in after.items() if _is_placeholder(c, v)]
        if op == "u" and key in out.rows:
            after = {c: out.rows[key][c] if c in holes else v for c, v in after.items()}
        if op == "c" and "__debezium.oldkey" in headers:
            out.key_change_creates += 1
        if holes and (op == "c" or every_event):
            # Allowed only for a row gone by the time it was read: a later event removes the key.
            later = [x["op"] for x, _ in events[n + 1 :] if _key(topic, x["after"] or x["before"]) == key]
            assert "d" in later, f"{op} of {key} kept placeholders in {holes}: {e['source']}"
            out.transient.append((key, ",".join(holes)))
        out.rows[key] = after
    return out


def blobs_in_db(sql: psycopg.Connection) -> dict[int, dict[str, Any]]:
    rows = sql.execute("SELECT id, qty, body, raw, doc::text, tags, nums FROM blobs").fetchall()
    return {
        r[0]: {
            "id": r[0],
            "qty": r[1],
            "body": r[2],
            "raw": None if r[3] is None else base64.b64encode(r[3]).decode(),
            "doc": r[4],
            "tags": r[5],
            "nums": r[6],
        }
        for r in rows
    }


def pairs_in_db(sql: psycopg.Connection) -> dict[tuple[str, int], dict[str, Any]]:
    rows = sql.execute("SELECT k, n, qty, note FROM pairs").fetchall()
    return {(k, n): {"k": k, "n": n, "qty": q, "note": note} for k, n, q, note in rows}


def _short(rows: dict[Any, dict[str, Any]]) -> dict[Any, dict[str, Any]]:
    """Rows with long values cut to a prefix and length: a failed comparison stays readable."""
    cut: Callable[[Any], Any] = lambda v: f"{v[:12]}…({len(v)})" if isinstance(v, str) and len(v) > 40 else v  # noqa: E731
    return {
        k: {c: cut(v) if not isinstance(v, list) else [cut(x) for x in v[:2]] for c, v in r.items()}
        for k, r in rows.items()
    }


def assert_replay_equals_table(
    h, sql: psycopg.Connection, seed: int, kinds: list[str], every_event: bool = False
) -> Replay:
    blobs, pairs = replay(h, BLOBS, every_event), replay(h, PAIRS, every_event)
    where = f"seed {seed}, transactions {kinds}"
    assert _short(blobs.rows) == _short(blobs_in_db(sql)), where
    assert blobs.rows == blobs_in_db(sql), where
    assert pairs.rows == pairs_in_db(sql), where
    assert blobs.key_change_creates >= 10 and pairs.key_change_creates >= 1, where
    return blobs


@pytest.mark.parametrize("seed", [1606, 2718, 31337])
def test_key_changes_of_toasted_rows_carry_their_values(herder, postgres_db, seed: int) -> None:  # noqa: F811
    sql = postgres_db.connect()
    _create_tables(sql)
    _streaming(sql, herder)
    rng = random.Random(seed)
    work = run_workload(rng, sql, steps=40)
    _check_toasted(sql)
    _finish(sql, herder)
    assert_replay_equals_table(herder, sql, seed, work.kinds)


def test_every_event_with_reselect_scope_all(herder, postgres_db) -> None:  # noqa: F811
    """reselect.scope=all, as Debezium's post processor: plain updates carry their values too."""
    seed = 909
    sql = postgres_db.connect()
    _create_tables(sql)
    _streaming(sql, herder, **{"reselect.scope": "all"})
    work = run_workload(random.Random(seed), sql, steps=30)
    _finish(sql, herder)
    assert_replay_equals_table(herder, sql, seed, work.kinds, every_event=True)
    # Each update changes at most one TOASTed column; the others are read from the table.
    updates = [v["after"] for v in values(herder, BLOBS) if v is not None and v["op"] == "u"]
    whole = [u for u in updates if not any(_is_placeholder(c, v) for c, v in u.items())]
    assert len(whole) >= 5, f"seed {seed}: {len(whole)} of {len(updates)} updates carry every value"


def _docs(sql: psycopg.Connection) -> str:
    sql.execute("CREATE TABLE docs(id int PRIMARY KEY, qty int, body text, raw bytea)")
    sql.execute("ALTER TABLE docs ALTER COLUMN body SET STORAGE EXTERNAL, ALTER COLUMN raw SET STORAGE EXTERNAL")
    return "srv.public.docs"


BODY = "b" * 9_000
RAW = bytes(range(256)) * 40


def _insert_doc(sql: psycopg.Connection, i: int) -> None:
    sql.execute("INSERT INTO docs VALUES (%s, 0, %s, %s)", (i, BODY, RAW))


def _after(h, topic: str, count: int) -> list[dict[str, Any] | None]:
    wait_until(lambda: len(values(h, topic)) >= count, what=f"{count} records on {topic}")
    return [None if v is None else v["after"] for v in values(h, topic)]


RAW_B64 = base64.b64encode(RAW).decode()


def test_a_row_gone_keeps_the_placeholder_and_its_delete_follows(herder, postgres_db) -> None:  # noqa: F811
    sql = postgres_db.connect()
    topic = _docs(sql)
    _streaming(sql, herder)
    _insert_doc(sql, 1)
    with sql.transaction():  # 1 → 2 → 3: when the create of 2 is read, the row is already 3
        sql.execute("UPDATE docs SET id = 2 WHERE id = 1")
        sql.execute("UPDATE docs SET id = 3 WHERE id = 2")
    _after(herder, topic, 7)
    events = values(herder, topic)
    ops = [(None, None) if e is None else (e["op"], (e["after"] or e["before"])["id"]) for e in events]
    assert ops == [("c", 1), ("d", 1), (None, None), ("c", 2), ("d", 2), (None, None), ("c", 3)]
    assert events[3]["after"]["body"] == PLACEHOLDER  # gone when read: its delete is the next event
    assert events[6]["after"] == {"id": 3, "qty": 0, "body": BODY, "raw": RAW_B64}


def test_reselect_off_sends_the_placeholder_as_debezium(herder, postgres_db) -> None:  # noqa: F811
    sql = postgres_db.connect()
    topic = _docs(sql)
    _streaming(sql, herder, **{"reselect.unavailable.values": "false"})
    _insert_doc(sql, 1)
    sql.execute("UPDATE docs SET id = 2 WHERE id = 1")
    create = _after(herder, topic, 4)[3]
    assert create == {"id": 2, "qty": 0, "body": PLACEHOLDER, "raw": _PLACEHOLDERS["raw"]}


def test_columns_exclude_list_leaves_a_column_out(herder, postgres_db) -> None:  # noqa: F811
    sql = postgres_db.connect()
    topic = _docs(sql)
    _streaming(sql, herder, **{"reselect.columns.exclude.list": "public\\.docs:RAW"})  # case-insensitive
    _insert_doc(sql, 1)
    sql.execute("UPDATE docs SET id = 2 WHERE id = 1")
    create = _after(herder, topic, 4)[3]
    assert create == {"id": 2, "qty": 0, "body": BODY, "raw": _PLACEHOLDERS["raw"]}


def test_a_lost_connection_is_reopened(herder, postgres_db) -> None:  # noqa: F811
    """The re-select connection is killed between two key changes: the second is read all the same."""
    sql = postgres_db.connect()
    topic = _docs(sql)
    _streaming(sql, herder)
    _insert_doc(sql, 1)
    sql.execute("UPDATE docs SET id = 2 WHERE id = 1")
    assert _after(herder, topic, 4)[3]["body"] == BODY
    killed = sql.execute(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = %s",
        (APPLICATION_NAME,),
    ).fetchone()[0]
    assert killed == 1
    sql.execute("UPDATE docs SET id = 3 WHERE id = 2")
    assert _after(herder, topic, 7)[6] == {"id": 3, "qty": 0, "body": BODY, "raw": RAW_B64}


def _no_select_role(sql: psycopg.Connection) -> str:
    """A REPLICATION role that may stream the tables but not read them; the publication made for it."""
    sql.execute("DROP ROLE IF EXISTS reselect_blind")
    sql.execute("CREATE ROLE reselect_blind LOGIN REPLICATION")
    sql.execute("CREATE PUBLICATION dbz_publication FOR ALL TABLES")
    return "reselect_blind"


def test_a_missing_select_privilege_stops_the_task_with_the_fix(herder, postgres_db) -> None:  # noqa: F811
    sql = postgres_db.connect()
    _docs(sql)
    user = _no_select_role(sql)
    try:
        _streaming(sql, herder, **{"database.user": user})
        _insert_doc(sql, 1)
        sql.execute("UPDATE docs SET id = 2 WHERE id = 1")
        trace = _failed_trace(herder)
        assert "cannot re-select column(s) body, raw of public.docs for the row with id=2" in trace
        assert f"GRANT SELECT ON public.docs TO {user}" in trace and "reselect.error.handling.mode=warn" in trace
    finally:
        herder.delete_connector("pg")
        sql.execute(f"DROP OWNED BY {user}; DROP ROLE {user}")


def test_warn_mode_sends_the_placeholder_and_says_why(herder, postgres_db, caplog) -> None:  # noqa: F811
    sql = postgres_db.connect()
    topic = _docs(sql)
    user = _no_select_role(sql)
    try:
        _streaming(sql, herder, **{"database.user": user, "reselect.error.handling.mode": "WARN"})
        _insert_doc(sql, 1)
        with caplog.at_level(logging.WARNING, logger="cdc_postgres.reselect"):
            sql.execute("UPDATE docs SET id = 2 WHERE id = 1")
            assert _after(herder, topic, 4)[3]["body"] == PLACEHOLDER
        assert any("GRANT SELECT ON public.docs" in r.getMessage() for r in caplog.records)
    finally:
        herder.delete_connector("pg")
        sql.execute(f"DROP OWNED BY {user}; DROP ROLE {user}")


def test_waits_until_the_events_transaction_is_visible(postgres_db) -> None:
    """pgoutput may send a commit a moment before other sessions see it: the read must wait for
    the event's transaction, not find no row and keep the placeholder. Here it is still open."""
    sql = postgres_db.connect()
    _docs(sql)
    _insert_doc(sql, 1)
    schema = PostgresSchema(sql, TopicNamingStrategy("srv"), PostgresValueConverters(), PLACEHOLDER)
    table = schema.for_table(sql.execute("SELECT 'docs'::regclass::oid").fetchone()[0], "public", "docs")
    dsn = {"host": postgres_db.host, "port": postgres_db.port, "user": postgres_db.user, "dbname": postgres_db.dbname}
    reselector = ColumnReselector(dsn, ReselectSettings(), threading.Event())
    writer = postgres_db.connect(autocommit=False)
    writer.execute("UPDATE docs SET id = 2 WHERE id = 1")
    xid = writer.execute("SELECT txid_current()").fetchone()[0] & 0xFFFFFFFF  # pgoutput's 32-bit xid
    new = ("2", "0", UNCHANGED_TOAST, UNCHANGED_TOAST)
    try:
        with ThreadPoolExecutor(1) as pool:
            filled = pool.submit(reselector.fill, table, new, xid)
            time.sleep(0.3)  # the read starts while the transaction is open (if later, it passes anyway)
            writer.commit()
            assert filled.result(timeout=60) == ("2", "0", BODY, "\\x" + RAW.hex())
        # An event of a transaction long committed, for a row that is gone: nothing to wait for.
        assert reselector.fill(table, ("9", "0", UNCHANGED_TOAST, None), xid) == ("9", "0", UNCHANGED_TOAST, None)
    finally:
        writer.close()
        reselector.close()


def _props(**extra: str) -> dict[str, str]:
    return {
        "connector.class": "PostgresConnector",
        "database.hostname": "h",
        "database.user": "u",
        "database.dbname": "d",
        "topic.prefix": "p",
        **extra,
    }


def test_debeziums_post_processor_configuration_is_understood() -> None:
    processor = {
        "post.processors": "reselector",
        "reselector.type": "io.debezium.processors.reselect.ReselectColumnsPostProcessor",
        "reselector.reselect.columns.include.list": "public.docs:body",
        "reselector.reselect.use.event.key": "true",
    }
    c = PostgresConnectorConfig.parse(_props(**processor)).values()
    s = ReselectSettings.from_config(c)
    # The post processor's own defaults: every event, nulls too, warn.
    assert (s.scope, s.null_values, s.fail, s.use_event_key, s.unavailable_values) == ("all", True, False, True, True)
    assert s.columns("public.docs:body") and not s.columns("public.docs:raw")
    default = ReselectSettings.from_config(PostgresConnectorConfig.parse(_props()).values())
    assert (default.scope, default.null_values, default.fail) == ("key_changes", False, True)
    # The connector's own key wins over a post processor default; a disagreement is an error.
    own = PostgresConnectorConfig.parse(_props(**processor, **{"reselect.scope": "key_changes"})).values()
    assert own["reselect.scope"] == "key_changes"
    clash = {**processor, "reselector.reselect.null.values": "true", "reselect.null.values": "false"}
    with pytest.raises(
        ConfigException, match=re.escape("reselect.null.values=false and reselector.reselect.null.values=true")
    ):
        PostgresConnectorConfig.parse(_props(**clash))


def test_unknown_post_processors_and_contradictory_lists_are_refused() -> None:
    other = {"post.processors": "x", "x.type": "com.example.Other"}
    errors = [e for v in validate(_props(**other)) for e in v.errors]
    assert any("x.type=com.example.Other" in e and "remove it from post.processors" in e for e in errors)
    both = {"reselect.columns.include.list": "a", "reselect.columns.exclude.list": "b"}
    with pytest.raises(ConfigException, match="mutually exclusive"):
        PostgresConnectorConfig.parse(_props(**both))
    with pytest.raises(ConfigException, match=re.escape("reselect.scope")):
        PostgresConnectorConfig.parse(_props(**{"reselect.scope": "sometimes"}))
