"""`kill -9` of a standalone worker mid-stream, then a restart: nothing is lost.

The source tails a file that keeps growing while the worker is killed and restarted.
Lines are fixed-width, so a stored byte position says exactly how many lines it covers.
- embedded: records and offsets commit in one SQLite transaction, so at the moment of the
  kill the topic holds exactly the lines the stored offset covers, and after the restart
  every line appears exactly once;
- Kafka: offsets are flushed every offset.flush.interval.ms for acknowledged records, so
  every line the stored offset covers is present, and duplicates appear only after it
  (the last unflushed interval).
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from pathlib import Path

from cdc.log.base import TopicLog
from cdc.log.embedded import EmbeddedLog
from cdc.log.kafka import KafkaLog
from tests.support.logs import stored_offsets, topic_records
from tests.support.proc import CdcProcess, wait_for, write_props

STRING = "org.apache.kafka.connect.storage.StringConverter"
TOTAL = 40_000
WIDTH = 9  # "%08d\n"


class Appender(threading.Thread):
    """Appends lines at a steady rate; holds at half the input until `release` is set.

    The hold guarantees the worker is killed mid-stream, with input still to come.
    """

    def __init__(self, path: Path, total: int, per_tick: int = 200, tick: float = 0.02) -> None:
        super().__init__(daemon=True)
        self.path, self.total, self.per_tick, self.tick = path, total, per_tick, tick
        self.written = 0
        self.release = threading.Event()

    def run(self) -> None:
        with open(self.path, "a") as f:
            while self.written < self.total:
                if self.written >= self.total // 2:
                    self.release.wait()
                n = min(self.per_tick, self.total - self.written)
                f.write("".join(f"{i:08d}\n" for i in range(self.written, self.written + n)))
                f.flush()
                self.written += n
                time.sleep(self.tick)


def _kill_and_resume(
    tmp_path: Path, log_: TopicLog, worker: dict[str, object], connector: dict[str, object]
) -> tuple[int, list[int]]:
    """Returns (lines covered by the offset stored at the kill, all line numbers in the topic)."""
    topic = str(connector["topic"])
    offsets_topic = str(worker.get("offset.storage.topic", "connect-offsets"))
    source = tmp_path / "input.txt"
    source.touch()
    wp = write_props(tmp_path / "worker.properties", worker)
    cp = write_props(tmp_path / "source.properties", {**connector, "file": source})
    key = json.dumps([connector["name"], {"filename": str(source)}], separators=(",", ":"))
    appender = Appender(source, TOTAL)
    appender.start()

    first = CdcProcess("standalone", str(wp), str(cp), log_path=tmp_path / "worker-1.log")
    try:
        wait_for(lambda: len(topic_records(log_, topic)) >= 5000, 60, "5000 records before the kill", first)
        wait_for(lambda: key in stored_offsets(log_, offsets_topic), 30, "a stored offset", first)
    finally:
        first.kill9()

    covered = stored_offsets(log_, offsets_topic)[key]["position"] // WIDTH
    at_kill = [int(r.value) for r in topic_records(log_, topic)]
    # No loss: the record of every stored offset is present.
    assert set(range(covered)) <= set(at_kill)
    if isinstance(log_, EmbeddedLog):
        # Records and offsets commit together: nothing beyond the offset, nothing missing.
        assert at_kill == list(range(covered))

    second = CdcProcess("standalone", str(wp), str(cp), log_path=tmp_path / "worker-2.log")
    appender.release.set()
    try:
        appender.join(60)
        final = {"position": TOTAL * WIDTH}
        wait_for(lambda: stored_offsets(log_, offsets_topic).get(key) == final, 90, "the final offset", second)
    finally:
        code = second.terminate()
    assert code == 0, second.output()[-3000:]
    return covered, [int(r.value) for r in topic_records(log_, topic)]


def test_kill9_embedded_no_loss_no_duplicates(plugin_path: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    worker = {
        "transport": "embedded",
        "state.dir": state,
        "listeners": "http://127.0.0.1:0",  # a free port: tests run side by side
        "plugin.path": plugin_path,
        "value.converter": STRING,
        "key.converter": STRING,
    }
    connector = {"name": "tail", "connector.class": "FileStreamSource", "topic": "lines", "poll.wait.ms": 10}
    log_ = EmbeddedLog(state)
    try:
        covered, lines = _kill_and_resume(tmp_path, log_, worker, connector)
    finally:
        log_.close()
    assert 0 < covered < TOTAL
    assert lines == list(range(TOTAL))


def test_kill9_kafka_duplicates_only_after_stored_offset(plugin_path: Path, tmp_path: Path, tansu) -> None:
    unique = tmp_path.name
    worker = {
        "transport": "kafka",
        "bootstrap.servers": tansu.bootstrap,
        "listeners": "http://127.0.0.1:0",  # a free port: tests run side by side
        "plugin.path": plugin_path,
        "value.converter": STRING,
        "key.converter": STRING,
        "offset.flush.interval.ms": 1000,
        "offset.storage.topic": f"offsets-{unique}",
        "offset.storage.partitions": 5,
        "status.storage.topic": f"status-{unique}",
        "status.storage.partitions": 1,
    }
    connector = {
        "name": "tail",
        "connector.class": "FileStreamSource",
        "topic": f"lines-{unique}",
        "poll.wait.ms": 10,
        "topic.creation.default.partitions": 1,
    }
    log_ = KafkaLog(tansu.bootstrap)
    try:
        covered, lines = _kill_and_resume(tmp_path, log_, worker, connector)
    finally:
        log_.close()
    assert 0 < covered < TOTAL
    counts = Counter(lines)
    assert set(counts) == set(range(TOTAL)), "a line is missing after the restart"
    duplicated = sorted(n for n, c in counts.items() if c > 1)
    assert all(n >= covered for n in duplicated), "a line covered by a stored offset was sent twice"
    # Per-partition order: the resumed stream replays from the stored offset onwards.
    first_pass_end = lines.index(duplicated[0], lines.index(duplicated[0]) + 1) if duplicated else len(lines)
    assert lines[:first_pass_end] == sorted(lines[:first_pass_end])
