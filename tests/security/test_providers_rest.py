"""Issue 17, deliverable 1: a REST caller cannot read the worker's files or environment
through config providers, and resolved values never come back out (CVE-2024-31141's class).

Each test here fails on the main before the fix: there `${file:/etc/passwd:root}` in a
REST-created connector was resolved, and its value came back in the 400 text, the status
trace, `GET /connectors/{name}/tasks` and the worker log.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc.api.errors import ConfigException
from cdc.config.properties import parse_properties
from cdc.config.providers import ConfigTransformer, check_submitted_references, rest_config_providers
from cdc.log.kafka import KafkaLog
from cdc.rest.server import RestServer
from cdc.runtime.distributed.herder import DistributedHerder
from cdc.runtime.plugins import PluginRegistry
from cdc.runtime.submitted_config import SubmittedConfigPolicy
from cdc.runtime.transport import open_log, open_offset_store, open_status_store
from cdc.runtime.worker import Worker
from cdc.runtime.worker_config import WorkerConfig
from cdc.storage.offsets import read_topic
from tests.distributed.cluster import cluster_props
from tests.rest.conftest import wait_until
from tests.rig.kafka import KafkaBroker
from tests.security.connectors import QuotingSource
from tests.security.provider_rig import SecureRest, capture_everything, log_text, quoting, secure_rest
from tests.support.examples import examples


def _passwd_root() -> str:
    """What `${file:/etc/passwd:root}` resolves to: `x:0:0:root:/root:/bin/...`."""
    return parse_properties(Path("/etc/passwd").read_text(errors="replace"))["root"]


def _environ_ref() -> tuple[str, str]:
    """A `${file:/proc/self/environ:KEY}` reference and what it resolves to in this process."""
    props = parse_properties(Path("/proc/self/environ").read_bytes().decode("utf-8", errors="replace"))
    key, value = next(iter(props.items()))
    return f"${{file:/proc/self/environ:{key}}}", value


def _secret_pieces(value: str) -> list[str]:
    """Distinctive pieces of a resolved value, any of which in a response would be a leak."""
    pieces = {value, *value.split("\x00"), *value.split(":")}
    return sorted(p for p in pieces if len(p) >= 6 and p not in ("/bin/bash", "/bin/sh", "nologin"))


def _assert_absent(pieces: list[str], *texts: str) -> None:
    for text in texts:
        for piece in pieces:
            assert piece not in text, (
                f"resolved value {piece!r} leaked: ...{text[max(0, text.find(piece) - 80) :][:200]}"
            )


@pytest.fixture
def rest(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> Iterator[SecureRest]:
    capture_everything(caplog)
    with secure_rest(tmp_path) as r:
        yield r


# -- the REST API refuses local providers by default ----------------------------------------
@pytest.mark.parametrize("key", ["host", "tasks.max", "topic"])
def test_file_etc_passwd_over_rest_is_refused_and_never_shown(
    rest: SecureRest, caplog: pytest.LogCaptureFixture, key: str
) -> None:
    secret = _passwd_root()
    body = quoting("leak", **{key: "${file:/etc/passwd:root}", "fail.start": "true"})
    r = rest.http.post("/connectors", json=body)
    assert r.status_code == 400, r.text
    message = r.json()["message"]
    assert "\n" not in message
    assert message.startswith(f"{key}: ${{file:/etc/passwd:root}} uses the 'file' config provider")
    assert "rest.config.providers=file" in message
    assert rest.http.get("/connectors").json() == []
    assert rest.http.get("/connectors/leak/status").status_code == 404
    _assert_absent(_secret_pieces(secret), r.text, rest.every_response("leak"), log_text(caplog))


def test_proc_self_environ_over_rest_is_refused_and_never_shown(
    rest: SecureRest, caplog: pytest.LogCaptureFixture
) -> None:
    ref, secret = _environ_ref()
    for method, path, body in [
        ("POST", "/connectors", quoting("env", host=ref, **{"task.fail": "true"})),
        ("PUT", "/connectors/env/config", quoting("env", host=ref)["config"]),
        ("PUT", "/connector-plugins/QuotingSource/config/validate", quoting("env", host=ref)["config"]),
    ]:
        r = rest.http.request(method, path, json=body)
        assert r.status_code == 400, (path, r.text)
        assert r.json()["message"].startswith(f"host: {ref} uses the 'file' config provider"), r.text
        _assert_absent(_secret_pieces(secret), r.text)
    assert rest.http.get("/connectors").json() == []
    _assert_absent(_secret_pieces(secret), rest.every_response("env"), log_text(caplog))


@pytest.mark.parametrize("ref", ["${env:HOME}", "${directory:/etc:passwd}", "${env:PATH}"])
def test_env_and_directory_over_rest_are_refused(rest: SecureRest, ref: str) -> None:
    r = rest.http.post("/connectors", json=quoting("c", host=ref))
    assert r.status_code == 400
    provider = ref[2:].split(":")[0]
    assert f"uses the '{provider}' config provider" in r.json()["message"]


def test_patch_cannot_add_a_reference(rest: SecureRest) -> None:
    assert rest.http.post("/connectors", json=quoting("p")).status_code == 201
    r = rest.http.patch("/connectors/p/config", json={"host": "${file:/etc/passwd:root}"})
    assert r.status_code == 400 and "uses the 'file' config provider" in r.json()["message"]
    assert "host" not in rest.http.get("/connectors/p/config").json()


# -- the operator's own configs keep every provider; REST shows references only -------------
def test_operator_config_resolves_and_rest_shows_only_the_reference(
    tmp_path: Path, rest: SecureRest, caplog: pytest.LogCaptureFixture
) -> None:
    secrets = tmp_path / "db.properties"
    secrets.write_text("host=db-Sup3rSecretHost.internal\n")
    ref = f"${{file:{secrets}:host}}"
    config = {**quoting("op", host=ref)["config"], "name": "op", "task.fail": "true"}
    rest.herder.put_connector_config(config, trusted=True)  # what `cdc standalone ... op.properties` does
    wait_until(lambda: (rest.state("op")["tasks"] or [{}])[0].get("state") == "FAILED", what="task FAILED")
    everything = rest.every_response("op")
    assert ref in rest.http.get("/connectors/op/config").text
    assert ref in rest.http.get("/connectors/op/tasks").text  # Kafka's reverseTransform
    assert "[hidden]" in rest.http.get("/connectors/op/status").json()["tasks"][0]["trace"]
    _assert_absent(["Sup3rSecret"], everything, log_text(caplog))
    # GET then PUT of the same config (the reference unchanged) and a PATCH of another key still work.
    current = rest.http.get("/connectors/op/config").json()
    assert rest.http.put("/connectors/op/config", json={**current, "task.fail": "false"}).status_code == 200
    assert rest.http.patch("/connectors/op/config", json={"topic": "op.other"}).status_code == 200
    assert rest.http.get("/connectors/op/config").json()["host"] == ref


# -- allowed over REST by the worker: still never shown -------------------------------------
@pytest.mark.integration
def test_allowed_provider_value_is_hidden_in_errors_traces_and_logs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "s.properties").write_text("tasks=NotANumber-Sup3rSecret\nhost=Sup3rSecret-host.example\n")
    (tmp_path / "outside.properties").write_text("host=OutsideSup3rSecret\n")
    capture_everything(caplog)
    props = {"rest.config.providers": "file", "config.providers.file.param.allowed.paths": str(vault)}
    with secure_rest(tmp_path, **props) as rest:
        # A bad value from a provider: Kafka's 400 text would quote it (`Invalid value ... for tasks.max`).
        r = rest.http.post("/connectors", json=quoting("v", **{"tasks.max": f"${{file:{vault}/s.properties:tasks}}"}))
        assert r.status_code == 400 and "tasks.max" in r.text and "[hidden]" in r.text
        r = rest.http.put(
            "/connector-plugins/QuotingSource/config/validate",
            json=quoting("v", **{"tasks.max": f"${{file:{vault}/s.properties:tasks}}"})["config"],
        )
        (tasks_max,) = [c["value"] for c in r.json()["configs"] if c["value"] and c["value"]["name"] == "tasks.max"]
        assert tasks_max["value"] == "[hidden]"
        assert tasks_max["errors"] == [
            "Invalid value [hidden] for configuration tasks.max: Expected value to be a 32-bit integer"
        ]
        # Outside allowed.paths: refused, nothing read.
        r = rest.http.post("/connectors", json=quoting("o", host=f"${{file:{tmp_path}/outside.properties:host}}"))
        assert r.status_code == 400 and "outside allowed.paths" in r.text
        # Allowed: the connector runs with the value; its failures quote it, status and log hide it.
        ref = f"${{file:{vault}/s.properties:host}}"
        r = rest.http.post("/connectors", json=quoting("ok", host=ref, **{"fail.start": "true"}))
        assert r.status_code == 201, r.text
        wait_until(lambda: rest.state("ok")["connector"]["state"] == "FAILED", what="the connector failed")
        assert "cannot connect to [hidden]" in rest.state("ok")["connector"]["trace"]
        r = rest.http.post("/connectors", json=quoting("t", host=ref, **{"task.fail": "true"}))
        assert r.status_code == 201, r.text
        wait_until(lambda: (rest.state("t")["tasks"] or [{}])[0].get("state") == "FAILED", what="the task failed")
        assert "lost the connection to [hidden]" in rest.state("t")["tasks"][0]["trace"]
        assert ref in rest.http.get("/connectors/t/tasks").text
        everything = "\n".join(rest.every_response(n) for n in ("v", "o", "ok", "t"))
        _assert_absent(["Sup3rSecret"], everything, log_text(caplog))


# -- the policy itself ----------------------------------------------------------------------
def test_default_rest_providers_are_the_declared_ones_without_local_ones() -> None:
    assert rest_config_providers({}) == frozenset()
    assert rest_config_providers({"config.providers": "vault,file,env"}) == {"vault"}
    assert rest_config_providers({"config.providers": "vault", "rest.config.providers": "file"}) == {"file"}
    assert rest_config_providers({"rest.config.providers": ""}) == frozenset()


_NAMES = st.sampled_from(["env", "file", "directory", "vault", "aws"])


@settings(max_examples=examples(200), deadline=None)
@given(
    allowed=st.frozensets(_NAMES),
    refs=st.lists(st.tuples(_NAMES, st.text("abcXYZ/._-", min_size=1, max_size=12)), min_size=0, max_size=4),
    literal=st.text(st.characters(blacklist_characters="${}"), max_size=10),
)
def test_a_reference_passes_exactly_when_its_provider_is_allowed(
    allowed: frozenset[str], refs: list[tuple[str, str]], literal: str
) -> None:
    value = literal + "".join(f"${{{p}:{k}}}" for p, k in refs)
    config = {"k": value}
    if all(p in allowed for p, _ in refs):
        check_submitted_references(config, allowed)
    else:
        with pytest.raises(ConfigException) as info:
            check_submitted_references(config, allowed)
        first_refused = next(p for p, _ in refs if p not in allowed)
        assert info.value.name == "k" and f"uses the '{first_refused}' config provider" in str(info.value)
        assert "\n" not in str(info.value)
    # A value the stored config already holds is admitted again unchanged.
    check_submitted_references(config, allowed, previous=config)


def test_config_transformer_still_resolves_operator_files(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CDC_TEST_OPERATOR_VALUE", "v")
    with ConfigTransformer.from_worker_config({}) as t:
        assert t.transform({"a": "${env:CDC_TEST_OPERATOR_VALUE}"}).data == {"a": "v"}


# -- allowed.paths: `..`, symbolic links, relative paths ------------------------------------
@pytest.fixture
def tree(tmp_path: Path) -> Path:
    allowed = tmp_path / "allowed"
    (allowed / "k8s" / "..2024_01_01").mkdir(parents=True)
    (allowed / "s.properties").write_text("a=in\n")
    (tmp_path / "outside.properties").write_text("a=OUTSIDE-VALUE\n")
    (tmp_path / "outside-secret").write_text("OUTSIDE-VALUE")
    os.symlink(tmp_path / "outside.properties", allowed / "link.properties")
    os.symlink(tmp_path, allowed / "up")
    os.symlink(tmp_path / "outside-secret", allowed / "k8s" / "leak")
    # A Kubernetes secret mount: pw -> ..data/pw -> ..2024_01_01/pw, all inside the mount.
    (allowed / "k8s" / "..2024_01_01" / "pw").write_text("k8s-secret")
    os.symlink("..2024_01_01", allowed / "k8s" / "..data")
    os.symlink("..data/pw", allowed / "k8s" / "pw")
    return tmp_path


def _transformer(tree: Path) -> ConfigTransformer:
    allowed = str(tree / "allowed")
    return ConfigTransformer.from_worker_config(
        {
            "config.providers.file.param.allowed.paths": allowed,
            "config.providers.directory.param.allowed.paths": allowed,
        }
    )


@pytest.mark.parametrize(
    "ref",
    [
        "${file:{t}/outside.properties:a}",
        "${file:{t}/allowed/../outside.properties:a}",
        "${file:{t}/allowed/./../outside.properties:a}",
        "${file:{t}/allowed/link.properties:a}",
        "${file:{t}/allowed/up/outside.properties:a}",
        "${file:allowed/s.properties:a}",
        "${directory:{t}:outside-secret}",
        "${directory:{t}/allowed/..:outside-secret}",
        "${directory:{t}/allowed/up:outside-secret}",
        "${directory:{t}/allowed/k8s:leak}",
    ],
)
def test_allowed_paths_refuses_traversal_and_links_out(tree: Path, ref: str) -> None:
    with _transformer(tree) as t, pytest.raises(ConfigException) as info:
        t.transform({"k": ref.replace("{t}", str(tree))})
    assert info.value.name == "k"
    assert "allowed.paths" in str(info.value) and "OUTSIDE-VALUE" not in str(info.value)


def test_allowed_paths_accepts_files_under_it_and_kubernetes_mounts(tree: Path) -> None:
    with _transformer(tree) as t:
        result = t.transform(
            {
                "a": f"${{file:{tree}/allowed/s.properties:a}}",
                "b": f"${{directory:{tree}/allowed/k8s:pw}}",
                "c": f"${{file:{tree}/allowed/k8s/../s.properties:a}}",
            }
        )
    assert result.data == {"a": "in", "b": "k8s-secret", "c": "in"}
    assert result.secrets == {"in", "k8s-secret"}


def test_a_file_that_is_not_properties_is_not_quoted(tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.write_text("private line \\u12zz-Sup3rSecret=1\n")
    with ConfigTransformer.from_worker_config({}) as t, pytest.raises(ConfigException) as info:
        t.transform({"k": f"${{file:{bad}:x}}"})
    assert "Sup3rSecret" not in str(info.value) and "not a valid .properties file" in str(info.value)


# -- distributed mode: the config topic holds references, not resolved values -----------------
def test_distributed_worker_refuses_local_providers_and_stores_no_resolved_value(
    tansu: KafkaBroker, tmp_path: Path
) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "s.properties").write_text("host=Sup3rSecret-dist.example\n")
    props = cluster_props(
        tansu.bootstrap,
        **{"rest.config.providers": "file", "config.providers.file.param.allowed.paths": str(vault)},
    )
    transformer = ConfigTransformer.from_worker_config(props)
    config = WorkerConfig(transformer.transform(props).data)
    registry = PluginRegistry.discover()
    registry.add(QuotingSource, "1.0", "test")
    log_ = open_log(config)
    worker = Worker(config, registry, log_, open_offset_store(config, log_, True), open_status_store(config, log_))
    herder = DistributedHerder(worker, transformer)
    server = RestServer(config, herder)
    server.start()
    worker.worker_id = worker.reporter.worker_id = server.url.removeprefix("http://")
    herder.start(server.url)
    http = httpx.Client(base_url=server.url, timeout=60)
    try:
        wait_until(lambda: herder.membership.is_leader, 60, "the leader")
        r = http.post("/connectors", json=quoting("d", host="${env:HOME}"))
        assert r.status_code == 400 and "uses the 'env' config provider" in r.json()["message"]
        ref = f"${{file:{vault}/s.properties:host}}"
        assert http.post("/connectors", json=quoting("d", host=ref)).status_code == 201
        wait_until(lambda: http.get("/connectors/d/tasks").json(), 60, "the task configs")
        assert http.get("/connectors/d/tasks").json()[0]["config"]["host"] == ref
        wait_until(lambda: [t["state"] for t in http.get("/connectors/d/status").json()["tasks"]] == ["RUNNING"], 60)
        with KafkaLog(tansu.bootstrap) as reader:
            stored = b"".join((r.value or b"") for r in read_topic(reader, props["config.storage.topic"]))
        assert ref.encode() in stored and b"Sup3rSecret" not in stored
    finally:
        http.close()
        herder.stop()
        server.stop()
        transformer.close()


@pytest.mark.parametrize(
    ("props", "warned"),
    [
        ({"rest.config.providers": "file,env"}, ["'file'", "'env'"]),
        ({"rest.config.providers": "file", "config.providers.file.param.allowed.paths": "/tmp"}, []),
        ({"rest.config.providers": "env", "config.providers.env.param.allowlist.pattern": "CDC_.*"}, []),
        ({"config.providers": "file,directory"}, []),  # declared, but not for REST: nothing to warn about
    ],
)
def test_a_worker_warns_when_rest_may_read_every_file_or_variable(
    props: dict[str, str], warned: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "cdc.runtime.submitted_config")
    SubmittedConfigPolicy.from_worker_config(WorkerConfig(props))
    messages = [r.getMessage() for r in caplog.records if r.name == "cdc.runtime.submitted_config"]
    assert len(messages) == len(warned)
    for provider, message in zip(warned, messages, strict=True):
        assert f"use the {provider} provider without" in message
