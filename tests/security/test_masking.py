"""Issue 17, deliverable 4: secrets are hidden by the shape of their key, not only when a ConfigDef
declares them PASSWORD: in every REST body (connector info, config, tasks, status, validate,
errors), in the worker log, and in `cdc status`. PUTting `[hidden]` back keeps the secret."""

from __future__ import annotations

import itertools
import json
import logging
import string
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from cdc.api.sensitive import HIDDEN, is_sensitive, keep_hidden, mask_config
from cdc.cli.jobs import status as status_command
from cdc.jobs.load import load_job
from cdc.runtime.connector_config import SINK_CONFIG_DEF, SOURCE_CONFIG_DEF
from cdc.runtime.plugins import PluginRegistry
from cdc.runtime.standalone import StandaloneHerder
from cdc.runtime.state_lock import StateDirLock
from cdc.runtime.transport import open_log, open_offset_store, open_status_store
from cdc.runtime.worker import Worker
from cdc.runtime.worker_config import WorkerConfig
from cdc.storage.status import State
from tests.rest.conftest import Rest, wait_until
from tests.security.echoing import ECHO_DEF, EchoingSource
from tests.support.examples import examples

# -- key names shaped like secrets, and values ------------------------------------------------
_WORD = st.text(alphabet=string.ascii_lowercase, min_size=2, max_size=8)
_PREFIX = st.lists(_WORD, max_size=3).map(".".join)
_ENDINGS = (  # Kafka's PASSWORD keys, Debezium's PASSWORD_PATTERN, Confluent's, key material
    "password",
    "ssl.key.password",
    "ssl.truststore.password",
    "sslpassword",
    "passwd",
    "sasl.jaas.config",
    "jaas.config",
    "basic.auth.user.info",
    "ssl.key",
    "ssl.keystore.key",
    "sslkey",
    "ssl.key.pem",
    "api.key",
    "private.key",
    "header.Authorization",
    "adls.connection-string",
)
_WORDS = ("secret", "client.secret", "token", "auth.token", "credentials", "gcs.credentials")
_EXEMPT_TAILS = {"class", "url", "uri", "endpoint", "file", "filename", "path", "location", "dir", "type"}
_EXEMPT_TAILS |= {"enable", "enabled", "source", "mode", "provider", "algorithm", "mechanism", "ms", "seconds"}
_DECLARED = ECHO_DEF.names() | SOURCE_CONFIG_DEF.names() | SINK_CONFIG_DEF.names()


def _join(*parts: str) -> str:
    return ".".join(p for p in parts if p)


SECRET_KEYS = st.one_of(
    st.builds(_join, _PREFIX, st.sampled_from(_ENDINGS)),
    st.builds(_join, _PREFIX, st.sampled_from(_WORDS), st.one_of(st.just(""), _WORD)).filter(
        lambda k: k.rsplit(".", 1)[-1] not in _EXEMPT_TAILS
    ),
).filter(lambda k: k not in _DECLARED and not k.startswith(("transforms.", "predicates.")))

SECRET_VALUES = (
    st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")) | st.just("\n"), min_size=8, max_size=40)
    .map(str.strip)
    .filter(lambda v: len(v) >= 8 and len(set(v)) >= 5 and "${" not in v and HIDDEN not in v)
    # a digit and a letter: a secret, not a word that the responses' own text could contain
    .filter(lambda v: any(c.isdigit() for c in v) and any(c.isalpha() for c in v))
)


def _forms(value: str) -> set[str]:
    return {value, repr(value)[1:-1]}


def _leaks(text: str, value: str) -> bool:
    return any(form in text for form in _forms(value))


def _strings(obj: Any) -> Iterator[str]:
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)


def assert_hidden(body: Any, value: str, where: str) -> None:
    for text in _strings(body):
        assert not _leaks(text, value), f"{where} shows the secret: {text!r}"


# -- the rule ----------------------------------------------------------------------------------
@given(SECRET_KEYS, SECRET_VALUES)
def test_keys_shaped_like_secrets_are_masked(key: str, value: str) -> None:
    assert is_sensitive(key), key
    config = {"topic": "t", key: value, "ref": "${env:X}", f"{key}.ref": "${file:/run/secrets/db:password}"}
    masked = mask_config(config)
    assert masked[key] == HIDDEN and masked["topic"] == "t"
    assert masked[f"{key}.ref"] == "${file:/run/secrets/db:password}"  # a reference is not the secret
    assert keep_hidden(config, masked) == config


@pytest.mark.parametrize(
    "key",
    [
        "sasl.oauthbearer.token.endpoint.url",
        "rest.basic.auth.credentials.file",
        "aws.credentials.provider.class",
        "basic.auth.credentials.source",
        "ssl.keystore.location",
        "ssl.key.location",
        "database.sslcert",
        "database.user",
        "message.key.columns",
        "key.converter",
        "tasks.max",
    ],
)
def test_keys_naming_a_place_or_a_kind_are_shown(key: str) -> None:
    assert not is_sensitive(key)


# -- REST, status and the worker log -----------------------------------------------------------
@pytest.fixture(scope="module")
def rest(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rest]:
    r = Rest(tmp_path_factory.mktemp("masking"))
    r.worker.registry.add(EchoingSource, "1.0", "test")
    yield r
    r.close()


_names = itertools.count()


def _failed(rest: Rest, name: str, task: bool) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        body = rest.http.get(f"/connectors/{name}/status").json()
        state = body["tasks"][0] if task and body.get("tasks") else body.get("connector", {}) if not task else {}
        return body if state.get("state") == State.FAILED.value and state.get("trace") else None

    return wait_until(check, what=f"{name} {'task' if task else 'connector'} FAILED with a trace")


@settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=SECRET_KEYS, value=SECRET_VALUES)
def test_secret_values_never_show_in_rest_status_or_log(
    rest: Rest, caplog: pytest.LogCaptureFixture, key: str, value: str
) -> None:
    assume(value not in key)  # the key's name is shown, of course
    caplog.set_level(logging.DEBUG)
    caplog.clear()
    name = f"echo{next(_names)}"
    base = {"connector.class": "EchoingSource", "topic": f"{name}.out", key: value}
    http = rest.http

    # validate and create with a value a validator refuses, quoting it
    refused = {**base, "api.secret": value}
    body = http.put("/connector-plugins/EchoingSource/config/validate", json=refused).json()
    assert body["error_count"] >= 1
    assert_hidden(body, value, "the validate body")
    res = http.post("/connectors", json={"name": name, "config": refused})
    assert res.status_code == 400 and "api.secret" in res.json()["message"]
    assert_hidden(res.json(), value, "the 400 error")

    # a connector whose start() fails quoting its whole config
    res = http.post("/connectors", json={"name": name, "config": {**base, "fail.start": "true"}})
    assert res.status_code == 201, res.text
    assert_hidden(res.json(), value, "the create response")
    assert_hidden(_failed(rest, name, task=False), value, "the connector status trace")
    for path in (f"/connectors/{name}", f"/connectors/{name}/config", "/connectors?expand=info&expand=status"):
        got = http.get(path).json()
        assert_hidden(got, value, path)
    assert http.get(f"/connectors/{name}/config").json()[key] == HIDDEN

    # GET the config, PUT it back with [hidden]: the secret stays; then a task fails quoting it
    shown = http.get(f"/connectors/{name}/config").json()
    res = http.put(f"/connectors/{name}/config", json={**shown, "fail.start": "false", "task.fail": "true"})
    assert res.status_code == 200, res.text
    assert rest.herder.connectors[name].config[key] == value
    assert_hidden(_failed(rest, name, task=True), value, "the task status trace")
    for path in (f"/connectors/{name}/tasks", f"/connectors/{name}/tasks/0/status"):
        assert_hidden(http.get(path).json(), value, path)
    assert http.get(f"/connectors/{name}/tasks").json()[0]["config"][key] == HIDDEN

    # and the worker log, tracebacks included
    formatter = logging.Formatter("%(message)s")
    for record in caplog.records:
        assert not _leaks(formatter.format(record), value), f"the log shows the secret: {record.getMessage()!r}"
    assert http.delete(f"/connectors/{name}").status_code == 204


# -- cdc status and cdc validate ---------------------------------------------------------------
JOB = """\
name: shop
source:
  connector.class: tests.security.echoing.EchoingSource
  topic: shop.orders
  task.fail: true
  {key}: {value}
transport:
  type: embedded
  state.dir: {state}
sink:
  type: delta
  path: {lake}
"""


def test_cdc_status_hides_a_secret_the_failed_task_quoted(tmp_path: Path) -> None:
    value = "s3cr3t-Tok3n-#" + str(time.time_ns())
    path = tmp_path / "job.yaml"
    text = JOB.format(key="auth.token", value=json.dumps(value), state=tmp_path / "state", lake=tmp_path / "lake")
    path.write_text(text)
    job = load_job(path, inspect_only=True)
    # what `cdc run` does with the job's source: a standalone herder on the job's transport
    config = WorkerConfig(job.worker_config())
    registry = PluginRegistry.discover()
    log_ = open_log(config)
    worker = Worker(config, registry, log_, open_offset_store(config, log_), open_status_store(config, log_), "w")
    herder = StandaloneHerder(worker, warn_unknown_keys=False)
    herder.start()
    try:
        herder.put_connector_config(job.connector_config(), trusted=True)
        status = worker.status_store
        wait_until(lambda: (t := status.get_task("shop", 0)) is not None and t.state is State.FAILED, what="FAILED")
        assert value not in (status.get_task("shop", 0).trace or "")
    finally:
        herder.stop()
    with StateDirLock.for_job(tmp_path / "state", "shop"):  # as if `cdc run` were still running
        res = CliRunner().invoke(status_command, [str(path)], catch_exceptions=False)
        as_json = CliRunner().invoke(status_command, [str(path), "--json"], catch_exceptions=False)
    assert "source task: FAILED" in res.output, res.output
    assert value not in res.output and value not in as_json.output
    assert HIDDEN in res.output


def test_cdc_validate_does_not_quote_a_secret_of_the_wrong_type(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    text = JOB.format(key="auth.token", value="x", state=tmp_path / "state", lake=tmp_path / "lake")
    path.write_text(text.replace("  type: embedded", "  type: embedded\n  ssl.keystore.password: 98765432109"))
    from cdc.cli.jobs import validate

    res = CliRunner().invoke(validate, [str(path), "--offline"], catch_exceptions=False)
    assert res.exit_code == 2 and "ssl.keystore.password" in res.output, res.output
    assert "98765432109" not in res.output


@pytest.mark.e2e
def test_a_task_process_failure_hides_the_secret_in_status_and_on_stderr(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """task.isolation=process: the child's own log lines and trace come back through the worker's
    stderr and the task status; both hide the secret."""
    value = "pr0cess-S3cret-" + str(time.time_ns())
    caplog.set_level(logging.DEBUG)
    rest = Rest(tmp_path, **{"task.isolation": "process"})
    try:
        config = {
            "connector.class": "tests.security.echoing.EchoingSource",  # the child imports it by name
            "topic": "iso.out",
            "database.sslpassword": value,
            "task.fail": "true",
        }
        assert rest.http.post("/connectors", json={"name": "iso", "config": config}).status_code == 201
        body = _failed(rest, "iso", task=True)
        assert "lost the session opened with" in body["tasks"][0]["trace"]
        assert_hidden(body, value, "the task status")
    finally:
        rest.close()
    err = capfd.readouterr().err
    assert "lost the session opened with" in err and value not in err
    assert not any(value in logging.Formatter().format(r) for r in caplog.records)
