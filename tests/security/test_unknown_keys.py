"""Issue 17, deliverable 5: every unknown worker or connector key is reported, as Kafka's
"The configuration '…' was supplied but isn't a known config.", with a did-you-mean, on the
three config paths: `.properties` files (`cdc standalone`), REST, and job YAML files."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from cdc.cli.jobs import validate
from cdc.jobs.load import load_job
from cdc.runtime.unknown_keys import UnknownKey, find_unknown_keys, unknown_connector_keys, unknown_worker_keys
from tests.rest.conftest import Rest

ROOT = Path(__file__).resolve().parents[2]
KAFKA_SAYS = "was supplied but isn't a known config."


# -- the rule ----------------------------------------------------------------------------------
def test_did_you_mean_names_the_closest_known_key() -> None:
    (u,) = find_unknown_keys({"tasks.maxx": "2"}, {"tasks.max", "topic", "name"})
    assert u.message == f"The configuration 'tasks.maxx' {KAFKA_SAYS} Did you mean 'tasks.max'?"
    (far,) = find_unknown_keys({"zzz.qqq": "1"}, {"tasks.max", "topic"})
    assert far.message == f"The configuration 'zzz.qqq' {KAFKA_SAYS}" and far.suggestion is None


def test_pass_through_keys_are_reported_only_as_near_misses() -> None:
    known = {"database.hostname", "database.user", "database.password", "connector.class"}
    props = {
        "database.useSSL": "true",  # a JDBC property Debezium passes on: not a typo of database.user
        "driver.connectTimeout": "5",
        "schema.history.internal.producer.security.protocol": "SSL",
        "producer.override.linger.ms": "5",
        "key.converter.schemas.enable": "false",
        "database.hostnmae": "db",  # a typo under the prefix
    }
    assert unknown_connector_keys(props, known) == [UnknownKey("database.hostnmae", "database.hostname")]


def test_kafka_connector_keys_and_alias_settings_are_known() -> None:
    props = {
        "config.action.reload": "restart",
        "topic.creation.groups": "g",
        "post.processors": "reselector",  # Debezium's: its aliases' settings pass through
        "reselector.type": "io.debezium.processors.reselect.ReselectColumnsPostProcessor",
        "transforms": "route",
        "transforms.route.regx": "x",  # the SMT defines regex: a typo, suggested within the alias
        "transforms.unlisted.type": "y",  # an alias `transforms` does not list
    }
    known = {"transforms", "transforms.route.type", "transforms.route.regex", "transforms.route.replacement"}
    known.add("post.processors")
    assert unknown_connector_keys(props, known) == [
        UnknownKey("transforms.route.regx", "transforms.route.regex"),
        UnknownKey("transforms.unlisted.type", "transforms.route.type"),
    ]


def test_worker_keys_kafka_settings_and_pass_through() -> None:
    props = {
        "transport": "embedded",
        "offset.flush.intervl.ms": "100",
        "rest.port": "8084",  # Kafka's (deprecated) key: this runtime listens on `listeners`
        "producer.linger.ms": "5",
        "kafka.socket.timeout.ms": "100",
        "config.providers.file.param.allowed.paths": "/etc/cdc",
        "ssl.truststore.location": "/tmp/ca.p12",
        "value.converter.schemas.enable": "false",
    }
    unknown = {u.name: u for u in unknown_worker_keys(props)}
    assert set(unknown) == {"offset.flush.intervl.ms", "rest.port"}
    assert unknown["offset.flush.intervl.ms"].suggestion == "offset.flush.interval.ms"
    assert "Kafka Connect setting this runtime does not use; it is ignored" in unknown["rest.port"].message


# -- .properties files: cdc standalone -------------------------------------------------------
@pytest.fixture
def standalone(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    worker = tmp_path / "worker.properties"
    worker.write_text(
        f"state.dir={tmp_path / 'state'}\nlisteners=http://127.0.0.1:0\noffset.flush.intervl.ms=100\n"
        "producer.linger.ms=5\nzzz.qqq=1\n"
    )
    connector = tmp_path / "gen.properties"
    connector.write_text(
        "name=gen\nconnector.class=tests.runtime.connectors.GeneratorSource\ntopic=gen.out\ncont=3\n"
        "database.useSSL=true\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "cdc.cli.main", "standalone", str(worker), str(connector)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    yield proc
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _read_until(proc: subprocess.Popen[str], needles: list[str], timeout: float = 120) -> str:
    """stderr until every needle showed up (or the process ended, or `timeout`)."""
    assert proc.stderr is not None
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stderr.readline, "")), daemon=True)  # type: ignore[union-attr]
    reader.start()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and reader.is_alive() and not all(n in "".join(lines) for n in needles):
        time.sleep(0.1)
    return "".join(lines)


@pytest.mark.e2e
def test_standalone_warns_for_unknown_worker_and_connector_keys(standalone: subprocess.Popen[str]) -> None:
    worker_typo = f"The configuration 'offset.flush.intervl.ms' {KAFKA_SAYS} Did you mean 'offset.flush.interval.ms'?"
    worker_unknown = f"The configuration 'zzz.qqq' {KAFKA_SAYS}"
    connector_typo = f"Connector gen: The configuration 'cont' {KAFKA_SAYS} Did you mean 'count'?"
    err = _read_until(standalone, [worker_typo, worker_unknown, connector_typo])
    assert worker_typo in err and worker_unknown in err and connector_typo in err, err
    assert "worker.properties: " in err  # the line names the file
    for passed_on in ("producer.linger.ms", "database.useSSL"):
        assert f"'{passed_on}'" not in err, err


# -- REST: create, update, validate ------------------------------------------------------------
@pytest.fixture
def rest(tmp_path: Path) -> Iterator[Rest]:
    r = Rest(tmp_path)
    yield r
    r.close()


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_rest_create_and_update_log_each_unknown_key(rest: Rest, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    config = {"connector.class": "ControlledSource", "topic": "t.out", "task.cont": "2", "zzz.qqq": "1"}
    assert rest.http.post("/connectors", json={"name": "ctl", "config": config}).status_code == 201
    warnings = _warnings(caplog)
    assert f"Connector ctl: The configuration 'task.cont' {KAFKA_SAYS} Did you mean 'task.count'?" in warnings
    assert f"Connector ctl: The configuration 'zzz.qqq' {KAFKA_SAYS}" in warnings
    caplog.clear()
    update = {"connector.class": "ControlledSource", "topic": "t.out", "fail.strat": "false"}
    assert rest.http.put("/connectors/ctl/config", json=update).status_code == 200
    assert _warnings(caplog) == [
        f"Connector ctl: The configuration 'fail.strat' {KAFKA_SAYS} Did you mean 'fail.start'?"
    ]


def test_rest_validate_reports_unknown_keys_next_to_kafkas_shape(rest: Rest) -> None:
    config = {"connector.class": "ControlledSource", "topic": "t.out", "task.cont": "2", "tasks.max": "x"}
    body = rest.http.put("/connector-plugins/ControlledSource/config/validate", json=config).json()
    assert body["warnings"] == [
        {
            "name": "task.cont",
            "message": f"The configuration 'task.cont' {KAFKA_SAYS} Did you mean 'task.count'?",
            "suggestion": "task.count",
        }
    ]
    # Kafka's fields are untouched: error_count counts errors only, and (as in Kafka) an unknown
    # key has no entry in `configs`.
    errors = [e for c in body["configs"] if c["value"] for e in c["value"]["errors"]]
    assert body["error_count"] == len(errors) > 0
    assert set(body) == {"name", "error_count", "groups", "configs", "warnings"}
    assert "task.cont" not in {c["value"]["name"] for c in body["configs"] if c["value"]}


# -- job files: cdc validate and cdc run ------------------------------------------------------
JOB = """\
name: shop
source:
  connector.class: tests.runtime.connectors.GeneratorSource
  topic: shop.orders
  count: 10
  database.useSSL: true
transforms:
  - name: route
    type: org.apache.kafka.connect.transforms.RegexRouter
    regex: "shop\\\\.(.*)"
    replacement: "shop.$1"
transport:
  type: embedded
  state.dir: {state}
sink:
  type: delta
  path: ./lake
"""


def _job(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "job.yaml"
    path.write_text(text.replace("{state}", str(tmp_path / "state")))
    return path


def test_job_transform_setting_typo_is_an_error_with_did_you_mean(tmp_path: Path) -> None:
    path = _job(tmp_path, JOB.replace('    replacement: "shop.$1"', '    replacement: "shop.$1"\n    replacment: x'))
    res = CliRunner().invoke(validate, [str(path), "--offline"], catch_exceptions=False)
    assert res.exit_code == 2, res.output
    assert (
        f"error: {path}:12: transforms[0].replacment: unknown key 'replacment'; did you mean 'replacement'?"
        in res.output
    )


def test_job_unknown_keys_are_warned_by_cdc_run(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """`cdc run` loads the job with load_job: unknown source and transform keys are logged."""
    text = JOB.replace("  count: 10", "  count: 10\n  zzz.qqq: 1").replace(
        '    replacement: "shop.$1"', '    replacement: "shop.$1"\n    foo.bar: 1'
    )
    caplog.set_level(logging.WARNING)
    load_job(_job(tmp_path, text))
    warnings = _warnings(caplog)
    assert any("source['zzz.qqq']: unknown key 'zzz.qqq'" in w for w in warnings), warnings
    assert any("transforms[0]['foo.bar']: unknown key 'foo.bar'" in w for w in warnings), warnings
    assert not any("useSSL" in w for w in warnings), warnings
