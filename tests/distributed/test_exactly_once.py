"""Exactly-once source across a `kill -9` failover, on librdkafka's mock cluster.

With `exactly.once.source.support=enabled` (and a `group.id`) each poll batch and its offsets
commit in one Kafka transaction, transactional.id `${group.id}-${connector}-${task}`, so the
worker that takes over resumes exactly after the last committed batch: a read_committed
consumer sees every number once. With it disabled, offsets are flushed on an interval and the
same failover re-sends what was already written: the contrast shows what EOS buys.

Two mock-cluster limits shape the test. Its group coordinator never answers the first
JoinGroup of a new group, so the worker that takes over is a fresh process rather than a
group member (the group failover itself is tested on Tansu). And it hands open and aborted
transactions to read_committed readers, which a real broker does not, so the kill lands
between transactions: right after a commit, while the task idles before its next batch.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from cdc.log.kafka import KafkaLog
from cdc.storage.offsets import read_topic
from tests.distributed.cluster import cluster_props
from tests.rest.conftest import wait_until
from tests.rig.kafka import KafkaBroker

ROOT = Path(__file__).resolve().parents[2]
COUNT = 60


def progress(witness: Path, kind: str) -> list[tuple[int, int]]:
    """(pid, next) of each `committed` (or `polled`) batch, in order."""
    if not witness.exists():
        return []
    out = []
    for line in witness.read_text().splitlines():
        event, key, pid, _ = line.split()
        if event == kind:
            out.append((int(pid), int(key.removeprefix("seq@"))))
    return out


def numbers(bootstrap: str, topic: str) -> list[int]:
    log_ = KafkaLog(bootstrap, consumer={"isolation.level": "read_committed"})
    if log_.describe_topic(topic) is None:
        return []
    return [int(json.loads(r.value)["payload"]) for r in read_topic(log_, topic) if r.value is not None]


def standalone(tmp_path: Path, worker: Path, connector: Path, n: int) -> subprocess.Popen:
    with open(tmp_path / f"worker{n}.log", "w") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "cdc.cli.main", "standalone", str(worker), str(connector)],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )


@pytest.mark.parametrize("eos", [True, False], ids=["eos", "at-least-once"])
def test_failover_with_and_without_exactly_once(kafka_mock: KafkaBroker, tmp_path: Path, eos: bool) -> None:
    witness = tmp_path / "witness.log"
    props = cluster_props(
        kafka_mock.bootstrap,
        **{
            "exactly.once.source.support": "enabled" if eos else "disabled",
            "offset.flush.interval.ms": "60000",
            "offset.storage.partitions": "4",  # the mock cluster auto-creates topics with 4 partitions
            "status.storage.partitions": "4",
        },
    )
    for internal in ("offset.storage.topic", "status.storage.topic"):
        kafka_mock.create_topic(props[internal], 4)  # no CreateTopics on the mock: auto-create them
    topic = f"{props['group.id']}-seq"
    worker = tmp_path / "worker.properties"
    worker.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    connector = tmp_path / "seq.json"
    config = {
        "connector.class": "tests.distributed.connectors.SequenceSource",
        "topic": topic,
        "count": str(COUNT),
        "witness.file": str(witness),
    }
    connector.write_text(json.dumps({"name": "seq", "config": config}))
    # EOS: kill right after a transaction commits. At-least-once commits offsets only every
    # offset.flush.interval.ms (60 s here), so any moment after a poll will do.
    kind = "committed" if eos else "polled"
    first = standalone(tmp_path, worker, connector, 1)
    second = None
    try:
        wait_until(lambda: any(n >= 15 for _, n in progress(witness, kind)), 60, "15 records out")
        seen = len(progress(witness, kind))
        wait_until(lambda: len(progress(witness, kind)) > seen, 10, "a fresh batch")
        first.send_signal(signal.SIGKILL)  # EOS: while the task idles between transactions
        first.wait(10)
        second = standalone(tmp_path, worker, connector, 2)
        wait_until(lambda: (second.pid, COUNT) in progress(witness, kind), 60, "the new worker finished")

        def complete() -> list[int] | None:
            got = numbers(kafka_mock.bootstrap, topic)
            return got if set(got) == set(range(COUNT)) else None

        got = wait_until(complete, 30, "every number in the topic")
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
    duplicates = {n: c for n, c in collections.Counter(got).items() if c > 1}
    assert set(got) == set(range(COUNT)), "records were lost"
    if eos:
        assert not duplicates and len(got) == COUNT
    else:
        assert duplicates, "without EOS the failover re-sends records written since the last offset flush"
