"""Static checks of docker/: no Docker engine here, so the compose demo is kept honest by
validating the compose file against the Compose Specification (the `compose-spec` package,
bindings of the Rust `compose_spec` crate; Debian's docker-compose as well where it is
installed, as `.ci/run` does), running `cdc validate` on its job
and checking that the Dockerfile, the compose file and the job line up with each other."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml
from compose_spec import PyCompose

from tests.support.proc import REPO, run_cdc

DOCKER = REPO / "docker"
COMPOSE = DOCKER / "docker-compose.yml"
JOB = DOCKER / "jobs" / "mysql-to-lake.yaml"
EMBEDDED_JOB = REPO / "examples" / "mysql-to-lake.yaml"
PLUGINS = ("debezium-core", "mysql", "postgres", "spark")


def _load(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text())


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return _load(COMPOSE)


@pytest.fixture(scope="module")
def job() -> dict[str, Any]:
    return _load(JOB)


def _mounts(service: dict[str, Any]) -> list[tuple[str, str]]:
    """(source, container path) of each short-syntax volume entry."""
    out = []
    for entry in service.get("volumes", []):
        source, target, *_ = str(entry).split(":")
        out.append((source, target))
    return out


def _host_path(compose: dict[str, Any], service: str, container_path: str) -> Path:
    """The host file behind a container path, through the service's bind mounts."""
    path = PurePosixPath(container_path)
    for source, target in _mounts(compose["services"][service]):
        if source.startswith((".", "/")) and path.is_relative_to(target):
            return (DOCKER / source / path.relative_to(target)).resolve()
    raise AssertionError(f"{service}: no bind mount covers {container_path}")


def _named_volume_for(compose: dict[str, Any], service: str, container_path: str) -> str | None:
    path = PurePosixPath(container_path)
    for source, target in _mounts(compose["services"][service]):
        if not source.startswith((".", "/")) and path.is_relative_to(target):
            return source
    return None


def test_compose_file_is_valid() -> None:
    """The Compose Specification's rules, with no docker binary: a fresh machine's `make test`
    checks the file too. `compose_spec` does not resolve YAML merge keys (`<<`), which Compose
    does, so the file goes through PyYAML (which resolves them) and JSON."""
    try:
        PyCompose.from_json(json.dumps(_load(COMPOSE)))
    except ValueError as e:
        raise AssertionError(f"{COMPOSE} breaks the Compose Specification: {e}") from None


@pytest.mark.parametrize(
    ("typo", "fixed"),
    [
        ("depends_on:", "dependson:"),
        ("restart: on-failure", "restart: sometimes"),
        ("condition: service_healthy", "condition: healthy"),
    ],
)
def test_compose_check_catches_mistakes(typo: str, fixed: str) -> None:
    """The check above would refuse a misspelt key or value: it is not a YAML parse only."""
    text = COMPOSE.read_text()
    assert typo in text
    with pytest.raises(ValueError):
        PyCompose.from_json(json.dumps(yaml.safe_load(text.replace(typo, fixed, 1))))


def test_compose_file_is_valid_for_docker_compose() -> None:
    """Debian's docker-compose (`.ci/run` installs it; no engine needed) interpolates and
    resolves the file as `docker compose up` would. Without the binary the specification
    check above stands alone."""
    exe = shutil.which("docker-compose")
    if exe is None:
        return
    res = subprocess.run(
        [exe, "-f", str(COMPOSE), "config", "-q"], capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert res.returncode == 0, f"docker-compose config rejects {COMPOSE}:\n{res.stdout}{res.stderr}"


@pytest.mark.e2e
def test_job_validates_offline(job: dict[str, Any], compose: dict[str, Any]) -> None:
    env_var = re.fullmatch(r"\$\{env:(\w+)\}", job["source"]["database.password"])
    assert env_var, "the job's database.password must come from ${env:...}, not be written in the file"
    for service in ("cdc", "verify"):
        assert env_var[1] in compose["services"][service]["environment"], f"{service} must set {env_var[1]}"
    res = run_cdc("validate", "--offline", str(JOB.relative_to(REPO)), env={env_var[1]: "secret"})
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.strip().endswith(": OK")


def test_job_is_the_embedded_example_on_kafka(job: dict[str, Any]) -> None:
    embedded = _load(EMBEDDED_JOB)
    # Connection settings, paths and the schema history's home differ by design (the embedded
    # transport keeps the history in its own log; on Kafka it is Debezium's history topic).
    local = {"database.hostname", "database.port", "database.user", "database.password"}
    local |= {k for k in job["source"] if k.startswith("schema.history.internal")}
    assert {k: v for k, v in job["source"].items() if k not in local} == {
        k: v for k, v in embedded["source"].items() if k not in local
    }
    assert {k: v for k, v in job["sink"].items() if k != "path"} == {
        k: v for k, v in embedded["sink"].items() if k != "path"
    }
    for key in ("name", "transforms", "spark"):
        assert job.get(key) == embedded.get(key), key
    assert job["transport"]["type"] == "kafka"
    assert job["source"]["schema.history.internal"] == "io.debezium.storage.kafka.history.KafkaSchemaHistory"
    assert job["source"]["schema.history.internal.kafka.bootstrap.servers"] == job["transport"]["bootstrap.servers"]


def test_dockerfile_copies_and_installs_what_exists(compose: dict[str, Any]) -> None:
    build = compose["services"]["cdc"]["build"]
    context = (DOCKER / build["context"]).resolve()
    assert context == REPO, "the image is built from the repository root"
    dockerfile = context / build["dockerfile"]
    assert dockerfile.is_file(), dockerfile
    ignored = {line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()}
    text = re.sub(r"\\\n", " ", dockerfile.read_text())
    copies = [shlex.split(line)[1:-1] for line in text.splitlines() if line.startswith("COPY ")]
    sources = [s for args in copies for s in args if not s.startswith("--")]
    assert sources, "no COPY in the Dockerfile"
    for src in sources:
        assert (context / src).exists(), f"COPY {src}: not in the build context"
        assert src.split("/")[0] not in ignored, f"COPY {src}: excluded by .dockerignore"
    pip = next(line for line in text.splitlines() if "pip install" in line)
    assert ".[jobs]" in pip, "the image runs `cdc run` and `cdc verify`: it must install cdc with its jobs extra"
    for plugin in PLUGINS:
        assert f"./plugins/{plugin}" in pip, f"the image must install plugins/{plugin}"
        assert (context / "plugins" / plugin / "pyproject.toml").is_file()
    assert "FROM python:3.11" in text and "openjdk-17-jre" in text, "the image needs Python 3.11 and Java 17"


def test_services_volumes_and_dependencies_line_up(compose: dict[str, Any], job: dict[str, Any]) -> None:
    services = compose["services"]
    declared = set(compose.get("volumes") or {})
    for name, service in services.items():
        for source, _ in _mounts(service):
            if source.startswith((".", "/")):
                assert (DOCKER / source).resolve().exists(), f"{name}: bind mount source {source} is missing"
            else:
                assert source in declared, f"{name}: volume {source} is not declared under volumes:"
        for dep, cond in (service.get("depends_on") or {}).items():
            assert cond == {"condition": "service_healthy"}, f"{name} must wait for {dep} to be healthy"
            assert "healthcheck" in services[dep], f"{dep} needs a healthcheck for {name} to wait on"

    # The worker runs the mounted job, reaches the job's hosts, and keeps its data on volumes.
    for service, verb in (("cdc", "run"), ("verify", "verify")):
        command = services[service]["command"]
        assert command[:2] == ["cdc", verb]
        assert _host_path(compose, service, command[2]) == JOB.resolve()
        assert _named_volume_for(compose, service, job["sink"]["path"]) == "lake"
        assert _named_volume_for(compose, service, job["transport"]["state.dir"]) == "cdc-state"
    assert set(services["cdc"]["depends_on"]) == {"mysql", "kafka", "schema-registry"}
    assert job["source"]["database.hostname"] in services
    kafka_host = job["transport"]["bootstrap.servers"]
    assert kafka_host.split(":")[0] in services
    assert f"//{kafka_host}" in services["kafka"]["environment"]["KAFKA_ADVERTISED_LISTENERS"]

    # The load generator and the schema come from examples/demo.
    loadgen = services["loadgen"]
    script = PurePosixPath(loadgen["working_dir"]) / loadgen["command"][1]
    assert _host_path(compose, "loadgen", str(script)) == (REPO / "examples" / "demo" / "loadgen.py").resolve()
    assert _host_path(compose, "mysql", "/opt/demo/shop.sql") == (REPO / "examples" / "demo" / "shop.sql").resolve()


def test_mysql_settings_match_the_connector_checks(compose: dict[str, Any], job: dict[str, Any]) -> None:
    flags = dict(arg.removeprefix("--").split("=", 1) for arg in compose["services"]["mysql"]["command"])
    required = {
        "binlog-format": "ROW",
        "binlog-row-image": "FULL",
        "binlog-row-metadata": "FULL",
        "gtid-mode": "ON",
        "enforce-gtid-consistency": "ON",
    }
    assert {k: flags.get(k) for k in required} == required
    assert flags.get("log-bin") and flags.get("binlog-transaction-compression", "OFF") == "OFF"
    assert int(flags["server-id"]) != int(job["source"]["database.server.id"])
    init = (DOCKER / "mysql" / "init-shop.sh").read_text()
    assert "GRANT SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'cdc'" in init


def test_the_job_writes_avro_through_the_composed_schema_registry(compose: dict[str, Any], job: dict[str, Any]) -> None:
    """Issue 20: the demo's job writes Avro; its registry URL names the registry service and the
    port it listens on, and that registry keeps its schemas in the same Kafka the job uses."""
    services = compose["services"]
    registry = services["schema-registry"]
    assert registry["image"].startswith("confluentinc/cp-schema-registry:")
    transport = job["transport"]
    assert transport["format"] == "avro"
    url = re.fullmatch(r"http://([\w-]+):(\d+)", transport["schema.registry.url"])
    assert url and url[1] == "schema-registry" and url[1] in services, transport["schema.registry.url"]
    env = registry["environment"]
    assert env["SCHEMA_REGISTRY_LISTENERS"].endswith(f":{url[2]}")
    assert (
        env["SCHEMA_REGISTRY_KAFKASTORE_BOOTSTRAP_SERVERS"].removeprefix("PLAINTEXT://")
        == transport["bootstrap.servers"]
    )
    assert int(env["SCHEMA_REGISTRY_KAFKASTORE_TOPIC_REPLICATION_FACTOR"]) <= 1  # one broker here
    assert registry["depends_on"] == {"kafka": {"condition": "service_healthy"}}
    assert url[2] in registry["healthcheck"]["test"][1]
