"""A plugin written only against cdc.api, dropped into plugin.path, runs under `cdc standalone`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from cdc.log.embedded import EmbeddedLog
from cdc.log.kafka import KafkaLog
from tests.support.logs import stored_offsets, topic_records
from tests.support.plugins import FILE_PLUGIN, build_wheel
from tests.support.proc import CdcProcess, run_cdc, wait_for, write_props

STRING = "org.apache.kafka.connect.storage.StringConverter"


def test_plugin_is_not_importable_without_plugin_path() -> None:
    # Proves the runs below find the connector through plugin.path, not the test venv.
    out = subprocess.run(
        [sys.executable, "-c", "import importlib.util as u; print(u.find_spec('cdc_file'))"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "None"


def test_plugins_list_shows_target_dir_and_wheel(plugin_path: Path, tmp_path: Path) -> None:
    wheel_dir = tmp_path / "wheels"
    wheel = build_wheel(FILE_PLUGIN, tmp_path / "build")
    wheel_dir.mkdir()
    wheel.rename(wheel_dir / wheel.name)
    for directory, location in ((plugin_path, "cdc-connector-file"), (wheel_dir, wheel.name)):
        res = run_cdc("plugins", "list", "--plugin-path", str(directory), "--json")
        assert res.returncode == 0, res.stderr
        rows = [json.loads(line) for line in res.stdout.splitlines()]
        mine = {r["class"]: r for r in rows if location in r["location"]}
        # Listed under Kafka's class names, as Kafka Connect lists them; the Python path is an alias.
        source = mine["org.apache.kafka.connect.file.FileStreamSourceConnector"]
        assert source["type"] == "source" and source["version"] == "0.1.0"
        assert mine["org.apache.kafka.connect.file.FileStreamSinkConnector"]["type"] == "sink"
        assert "cdc_file.source.FileStreamSourceConnector" in source["aliases"]
        assert not any(name.startswith("cdc_file.") for name in mine)
        # Built-ins are listed too, under Kafka's and Debezium's class names.
        classes = {r["class"] for r in rows}
        assert {"org.apache.kafka.connect.json.JsonConverter", "io.debezium.connector.mysql.MySqlConnector"} <= classes
        kinds = {r["type"] for r in rows}
        assert {"converter", "header_converter", "transformation", "predicate"} <= kinds


def test_plugins_list_table(plugin_path: Path) -> None:
    res = run_cdc("plugins", "list", "--plugin-path", str(plugin_path))
    assert res.returncode == 0, res.stderr
    line = next(
        x for x in res.stdout.splitlines() if x.startswith("org.apache.kafka.connect.file.FileStreamSourceConnector ")
    )
    assert line.split()[1:3] == ["source", "0.1.0"]
    assert str(plugin_path / "cdc-connector-file") in line


def _run_file_source(worker: dict[str, object], connector: dict[str, object], tmp_path: Path, log_, lines: int) -> None:
    topic = str(connector["topic"])
    offsets_topic = str(worker.get("offset.storage.topic", "connect-offsets"))
    source = tmp_path / "input.txt"
    source.write_text("".join(f"line {i}\n" for i in range(lines)))
    wp = write_props(tmp_path / "worker.properties", worker)
    cp = write_props(tmp_path / "source.properties", {**connector, "file": source})
    key = json.dumps([connector["name"], {"filename": str(source)}], separators=(",", ":"))
    final = {"position": source.stat().st_size}
    proc = CdcProcess("standalone", str(wp), str(cp), log_path=tmp_path / "worker.log")
    try:
        wait_for(lambda: len(topic_records(log_, topic)) >= lines, 60, f"{lines} records in {topic!r}", proc)
        wait_for(lambda: stored_offsets(log_, offsets_topic).get(key) == final, 30, "the final offset", proc)
    finally:
        code = proc.terminate()
    assert code == 0, proc.output()[-3000:]
    assert [r.value.decode() for r in topic_records(log_, topic)] == [f"line {i}" for i in range(lines)]
    # Kafka Connect's offsets format: key ["<connector>", {partition}], value the offset map.
    assert stored_offsets(log_, offsets_topic) == {key: final}


def test_standalone_embedded(plugin_path: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    worker = {
        "transport": "embedded",
        "state.dir": state,
        "listeners": "http://127.0.0.1:0",  # a free port: tests run side by side
        "plugin.path": plugin_path,
        "value.converter": STRING,
        "key.converter": STRING,
    }
    connector = {"name": "file-source", "connector.class": "FileStreamSource", "topic": "lines", "poll.wait.ms": 50}
    state.mkdir()
    log_ = EmbeddedLog(state)
    try:
        _run_file_source(worker, connector, tmp_path, log_, 500)
    finally:
        log_.close()
    wp = str(tmp_path / "worker.properties")
    res = run_cdc("offsets", "show", "--worker", wp)
    assert res.returncode == 0, res.stderr
    (row,) = [json.loads(x) for x in res.stdout.splitlines()]
    assert row["connector"] == "file-source" and row["offset"]["position"] > 0

    res = run_cdc("topics", "list", "--worker", wp)
    assert res.returncode == 0, res.stderr
    assert "lines\tpartitions=1\trecords=500\tend_offsets=500" in res.stdout.splitlines()
    assert any(line.startswith("connect-offsets\tpartitions=25") for line in res.stdout.splitlines())

    res = run_cdc("topics", "read", "--worker", wp, "lines", "--from-beginning", "--max", "3")
    assert res.returncode == 0, res.stderr
    rows = [json.loads(x) for x in res.stdout.splitlines()]
    assert [(r["topic"], r["partition"], r["offset"], r["key"], r["value"]) for r in rows] == [
        ("lines", 0, i, None, f"line {i}") for i in range(3)
    ]
    assert all(r["headers"] == [] and r["timestamp"] > 0 for r in rows)

    # The offsets topic decodes as JSON: key ["name",{partition}], value {offset}.
    res = run_cdc("topics", "read", "--worker", wp, "connect-offsets", "--from-beginning")
    (off,) = [json.loads(x) for x in res.stdout.splitlines()]
    assert off["key"][0] == "file-source" and off["value"] == {"position": row["offset"]["position"]}

    res = run_cdc("topics", "read", "--worker", wp, "nope", "--from-beginning")
    assert res.returncode == 2 and "does not exist" in res.stderr


def test_standalone_kafka(plugin_path: Path, tmp_path: Path, tansu) -> None:
    unique = tmp_path.name
    worker = {
        "transport": "kafka",
        "bootstrap.servers": tansu.bootstrap,
        "listeners": "http://127.0.0.1:0",  # a free port: tests run side by side
        "plugin.path": plugin_path,
        "value.converter": STRING,
        "key.converter": STRING,
        "offset.flush.interval.ms": 500,
        "offset.storage.partitions": 5,
        "status.storage.partitions": 1,
        "offset.storage.topic": f"offsets-{unique}",
        "status.storage.topic": f"status-{unique}",
    }
    connector = {
        "name": "file-source",
        "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
        "topic": f"lines-{unique}",
        "poll.wait.ms": 50,
        # Tansu 0.6 does not auto-create topics: the connector creates its own.
        "topic.creation.default.partitions": 1,
    }
    log_ = KafkaLog(tansu.bootstrap)
    try:
        _run_file_source(worker, connector, tmp_path, log_, 500)
    finally:
        log_.close()
