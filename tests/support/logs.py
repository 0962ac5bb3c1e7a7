"""Read topics and stored offsets straight from a transport, independent of the worker process."""

from __future__ import annotations

import json
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
