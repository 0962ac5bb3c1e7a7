"""Read topics and stored offsets straight from a transport, independent of the worker process."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from cdc.log.base import LogRecord, TopicLog
from cdc.storage.offsets import read_topic


def topic_records(log_: TopicLog, topic: str) -> list[LogRecord]:
    if log_.describe_topic(topic) is None:
        return []
    return read_topic(log_, topic)


def stored_offsets(log_: TopicLog, topic: str = "connect-offsets") -> dict[str, Any]:
    """Latest offset per raw key JSON, exactly as stored (null values remove the key)."""
    latest: dict[str, Any] = {}
    for r in topic_records(log_, topic):
        assert r.key is not None
        k = r.key.decode()
        if r.value is None:
            latest.pop(k, None)
        else:
            latest[k] = json.loads(r.value)
    return latest


def count_in_log(state: Path, topic: str, *contains: str) -> int:
    """Records of `topic` in the embedded log under `state` whose value holds every one of `contains`
    (read-only, beside a running job; 0 while the log does not exist yet or is busy)."""
    db = state / "cdc.db"
    if not db.exists():
        return 0
    where = "".join(" AND instr(value, ?) > 0" for _ in contains)
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as conn:
            row = conn.execute(f"SELECT count(*) FROM records WHERE topic = ?{where}", (topic, *contains)).fetchone()
    except sqlite3.Error:
        return 0
    return int(row[0])


def incremental_read_ids(state: Path, topic: str) -> list[int]:
    """The `id`s of the incremental snapshot's `r` events in `topic` of the embedded log under `state`, in log
    order (JSON values with schemas; read-only, beside a running job; [] while the log is absent or busy)."""
    db = state / "cdc.db"
    if not db.exists():
        return []
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as conn:
            values = [r[0] for r in conn.execute(
                "SELECT value FROM records WHERE topic = ? AND instr(value, '\"snapshot\":\"incremental\"') > 0 "
                "ORDER BY offset", (topic,),
            )]  # fmt: skip
    except sqlite3.Error:
        return []
    payloads = [json.loads(v).get("payload") for v in values]
    return [int(p["after"]["id"]) for p in payloads if p.get("op") == "r"]
