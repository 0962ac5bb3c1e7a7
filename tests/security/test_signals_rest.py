"""Issue 33, item 5: signals over REST and `cdc signal` are bounded and go only where they are read.

Before the fix an `id` over Debezium's `VARCHAR(42)` (or a `data` over `VARCHAR(2048)`) reached
the database and came back as a 500 blaming missing INSERT grants, while the file and kafka
channels took it silently; a `channel` the connector does not read was answered 202, wrote
`file-signals.txt` into the worker's working directory and the signal was lost (and `cdc signal
--channel file` did the same). Now each is one 400 line naming the field and its limit, or the
connector's channels, and nothing is written. The fuzz at the end sends bodies of every shape:
no 500, no traceback in the worker's log, no file written anywhere but the configured signal file.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc.api.errors import ConfigException
from cdc.runtime.signal_delivery import Signal, deliver
from tests.jobs.jobfile import mysql_delta_job
from tests.rest.conftest import controlled
from tests.security import rest_rig
from tests.security.rest_rig import Api, error
from tests.support.examples import examples

api_factory = rest_rig.api_factory


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The worker's working directory: an empty one of its own, to see what lands there."""
    where = tmp_path / "cwd"
    where.mkdir()
    monkeypatch.chdir(where)
    return where


def _connector(api: Api, name: str, **config: str) -> None:
    body = controlled(name, **config)
    body["initial_state"] = "STOPPED"  # the channels need the config, not a task
    created = api.client().post("/connectors", json=body)
    assert created.status_code == 201, created.text


def test_over_long_id_and_data_are_400s_naming_the_field_and_limit(api_factory: Any, cwd: Path) -> None:
    api = api_factory()
    signal_file = Path(api.worker.config.get("state.dir")) / "connectors" / "f" / "signals.jsonl"
    _connector(api, "f", **{"signal.enabled.channels": "file", "signal.file": str(signal_file)})
    with api.client() as http:
        long_id = http.post("/connectors/f/signals", json={"id": "i" * 43, "type": "pause-snapshot"})
        assert long_id.status_code == 400, long_id.text
        message = error(long_id)
        assert "'id'" in message and "42" in message and "43" in message, message
        data = {"type": "log", "data": {"message": "m" * 2100}}
        long_data = http.post("/connectors/f/signals", json=data)
        assert long_data.status_code == 400, long_data.text
        message = error(long_data)
        assert "'data'" in message and "2048" in message, message
        assert not signal_file.exists()  # nothing of either was written
        # At the limits, the signal goes through: an id of 42, a data whose JSON text is 2048.
        fits = {"message": "m" * (2048 - len(json.dumps({"message": ""})))}
        ok = http.post("/connectors/f/signals", json={"id": "i" * 42, "type": "log", "data": fits})
        assert ok.status_code == 202, ok.text
    (line,) = signal_file.read_text().splitlines()
    assert json.loads(line) == {"id": "i" * 42, "type": "log", "data": fits}
    assert not _files(cwd)


def test_control_characters_and_surrogates_in_the_id_are_refused(api_factory: Any, cwd: Path) -> None:
    api = api_factory()
    signal_file = Path(api.worker.config.get("state.dir")) / "connectors" / "f" / "signals.jsonl"
    _connector(api, "f", **{"signal.enabled.channels": "file", "signal.file": str(signal_file)})
    with api.client() as http:
        for signal_id in ("a\nb", "nul\x00", "esc\x1b[2J"):
            r = http.post("/connectors/f/signals", json={"id": signal_id, "type": "pause-snapshot"})
            assert r.status_code == 400 and "'id'" in error(r), r.text
        raw = b'{"id": "x\\ud800", "type": "pause-snapshot"}'
        r = http.post("/connectors/f/signals", content=raw, headers={"Content-Type": "application/json"})
        assert r.status_code == 400, r.text
        assert "'id'" in error(r) and "surrogate" in error(r)
    assert not signal_file.exists() and not _files(cwd)


def test_a_channel_the_connector_does_not_read_is_refused_and_nothing_is_written(api_factory: Any, cwd: Path) -> None:
    api = api_factory()
    _connector(api, "k", **{"signal.enabled.channels": "kafka", "topic.prefix": "shop"})
    state = Path(api.worker.config.get("state.dir"))
    before = _files(state)
    with api.client() as http:
        for channel in ("file", "source"):
            r = http.post("/connectors/k/signals", json={"type": "pause-snapshot", "channel": channel})
            assert r.status_code == 400, r.text
            message = error(r)
            assert f"the {channel} channel" in message and "signal.enabled.channels is kafka" in message, message
        # The channel it reads still works.
        sent = http.post("/connectors/k/signals", json={"type": "pause-snapshot", "channel": "kafka"})
        assert sent.status_code == 202 and sent.json()["destination"] == "topic shop-signal (key shop)", sent.text
    assert not _files(cwd)  # no file-signals.txt in the worker's working directory
    assert not any(p.name == "file-signals.txt" for p in _files(state) - before)


def test_the_file_channel_without_an_absolute_signal_file_writes_nothing(api_factory: Any, cwd: Path) -> None:
    api = api_factory()
    _connector(api, "d", **{"signal.enabled.channels": "file"})  # Debezium's default: file-signals.txt
    with api.client() as http:
        r = http.post("/connectors/d/signals", json={"type": "resume-snapshot"})
        assert r.status_code == 400, r.text
        assert "signal.file" in error(r) and "absolute" in error(r)
    assert not _files(cwd)
    # A relative signal.file (an operator's file may say so) is the worker's working directory too.
    config = {"signal.enabled.channels": "file", "signal.file": "signals.txt"}
    with pytest.raises(ConfigException) as refused:
        deliver(config, Signal("s", "resume-snapshot", None), table_writer=None, topic_log=_no_log)
    assert refused.value.name == "signal.file" and "relative" in str(refused.value)
    assert not _files(cwd)


def _no_log() -> Any:
    raise AssertionError("no log is opened for the file channel")


def _job(tmp_path: Path, **source: str) -> Path:
    props = {
        "connector.class": "io.debezium.connector.mysql.MySqlConnector",
        "database.hostname": "127.0.0.1",
        "database.port": "3306",
        "database.user": "cdc",
        "database.password": "x",
        "database.server.id": "5400",
        "topic.prefix": "shop",
        **source,
    }
    return mysql_delta_job(tmp_path, "sig", props, {"shop.orders": ""})


def test_cdc_signal_refuses_a_channel_the_job_does_not_read(tmp_path: Path, cwd: Path) -> None:
    job = _job(tmp_path, **{"signal.enabled.channels": "kafka"})
    from cdc.cli.signal import signal

    res = CliRunner().invoke(signal, [str(job), "pause-snapshot", "--channel", "file"], catch_exceptions=False)
    assert res.exit_code != 0, res.output
    (line,) = res.output.strip().splitlines()
    assert "file channel" in line and "signal.enabled.channels is kafka" in line, line
    assert not _files(cwd)
    res = CliRunner().invoke(signal, [str(job), "pause-snapshot", "--id", "x" * 43], catch_exceptions=False)
    assert res.exit_code != 0 and "42" in res.output and len(res.output.strip().splitlines()) == 1, res.output


# -- the fuzz ---------------------------------------------------------------------------------------


class _Traces(logging.Handler):
    """Every record the worker logs while the fuzz runs, to find tracebacks and errors in."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Api, Path, Path]]:
    root = Path(tmp_path_factory.mktemp("sigfuzz"))
    cwd = root / "cwd"
    cwd.mkdir()
    old = os.getcwd()
    os.chdir(cwd)
    api = Api(root / "w")
    signal_file = Path(api.worker.config.get("state.dir")) / "connectors" / "f" / "signals.jsonl"
    try:
        _connector(api, "f", **{"signal.enabled.channels": "file", "signal.file": str(signal_file)})
        _connector(api, "k", **{"signal.enabled.channels": "kafka", "topic.prefix": "p"})
        _connector(api, "none", **{"signal.enabled.channels": "jmx"})
        _connector(api, "dflt", **{"signal.enabled.channels": "file"})
        yield api, cwd, signal_file
    finally:
        api.close()
        os.chdir(old)


_text = st.text(st.characters(codec="utf-8"), max_size=60)
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | _text,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(_text, children, max_size=3),
    max_leaves=12,
)
_signal_bodies = st.fixed_dictionaries(
    {},
    optional={
        "id": st.one_of(_text, st.integers(0, 200).map(lambda n: "i" * n), _json),
        "type": st.sampled_from(["execute-snapshot", "stop-snapshot", "pause-snapshot", "resume-snapshot", "log"])
        | _json,
        "data": st.one_of(
            st.none(),
            st.fixed_dictionaries(
                {"data-collections": st.lists(_text, max_size=3)}, optional={"type": _json, "message": _text}
            ),
            st.integers(0, 4000).map(lambda n: {"message": "m" * n}),
            _json,
        ),
        "channel": st.sampled_from(["source", "file", "kafka", "jmx", ""]) | _json,
    },
)
# Bodies that pass the parser, so the fuzz reaches each connector's channels too.
_sendable = st.fixed_dictionaries(
    {"type": st.sampled_from(["pause-snapshot", "resume-snapshot", "log"])},
    optional={
        "id": st.integers(1, 50).map(lambda n: "i" * n),
        "data": st.integers(0, 2100).map(lambda n: {"message": "m" * n}),
        "channel": st.sampled_from(["source", "file", "kafka"]),
    },
)
_raw = st.one_of(
    _sendable.map(lambda b: json.dumps(b).encode()),
    _signal_bodies.map(lambda b: json.dumps(b).encode()),
    st.binary(max_size=120),
    st.sampled_from([b'{"id": "\\udc80", "type": "log"}', b'{"type": "log", "data": {"\\ud800": 1}}', b"[" * 80]),
)


@pytest.mark.integration
def test_fuzzed_signals_get_no_500_no_traceback_and_write_no_stray_file(fuzzed: tuple[Api, Path, Path]) -> None:
    api, cwd, signal_file = fuzzed
    state = Path(api.worker.config.get("state.dir"))
    before = _files(state)
    traces = _Traces()
    logging.getLogger().addHandler(traces)
    problems: list[str] = []
    accepted = 0
    try:

        @settings(
            max_examples=examples(300),
            derandomize=True,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(name=st.sampled_from(["f", "k", "none", "dflt", "missing"]), body=_raw)
        def run(name: str, body: bytes) -> None:
            nonlocal accepted
            with api.client() as http:
                r = http.post(f"/connectors/{name}/signals", content=body, headers={"Content-Type": "application/json"})
            if r.status_code >= 500:
                problems.append(f"{name} {body[:120]!r} -> {r.status_code} {r.text[:200]}")
            elif r.status_code >= 400:
                body_json = r.json()
                if body_json.get("error_code") != r.status_code or "\n" in body_json.get("message", "\n"):
                    problems.append(f"{name} {body[:120]!r} -> {r.status_code} {r.text[:200]}")
            else:
                accepted += 1

        run()
    finally:
        logging.getLogger().removeHandler(traces)
    assert not problems, "\n".join(problems[:10])
    assert accepted > 0  # the fuzz reached the delivery, not only the parser
    logged = [r for r in traces.records if r.exc_info or r.levelno >= logging.ERROR]
    assert not logged, [r.getMessage()[:200] for r in logged[:5]]
    assert not _files(cwd)
    written = _files(state) - before
    assert written <= {signal_file}, written
    if signal_file.exists():
        for line in signal_file.read_text().splitlines():
            doc = json.loads(line)
            assert len(doc["id"]) <= 42 and len(json.dumps(doc["data"])) <= 2048
