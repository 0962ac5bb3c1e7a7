"""Load and validate a job file, reporting every problem with its YAML path and line.

`cdc validate` prints all problems at once (a user fixes a file in one pass); `load_job`
raises on the first one for commands that need a valid job.
"""

from __future__ import annotations

import difflib
import json
import socket
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from cdc.api.errors import ConfigException
from cdc.config.providers import ConfigTransformer
from cdc.jobs.paths import format_path
from cdc.jobs.spec import CONNECTOR_ALIASES, JobSpec


@dataclass(frozen=True)
class JobProblem:
    path: tuple[str | int, ...]
    message: str
    line: int | None = None

    def render(self, filename: str) -> str:
        where = f"{filename}:{self.line}" if self.line else filename
        return f"{where}: {format_path(self.path)}: {self.message}"


class JobError(ConfigException):
    """The first problem of an invalid job, as one line."""

    def __init__(self, filename: str, problems: list[JobProblem]) -> None:
        self.problems = problems
        self.filename = filename
        first = problems[0]
        more = f" (and {len(problems) - 1} more; run `cdc validate {filename}`)" if len(problems) > 1 else ""
        super().__init__(first.render(filename) + more, format_path(first.path))


def job_schema() -> dict[str, Any]:
    return json.loads(resources.files("cdc.jobs").joinpath("job.schema.json").read_text())


# -- YAML with line numbers -----------------------------------------------------------------
def _lines(node: yaml.Node, path: tuple[str | int, ...], out: dict[tuple[str | int, ...], int]) -> None:
    out.setdefault(path, node.start_mark.line + 1)  # a key's own line wins over its value's
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            key = k.value if isinstance(k, yaml.ScalarNode) else str(k.value)
            out[(*path, key)] = k.start_mark.line + 1
            _lines(v, (*path, key), out)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _lines(item, (*path, i), out)


def _parse(text: str) -> tuple[Any, dict[tuple[str | int, ...], int]]:
    lines: dict[tuple[str | int, ...], int] = {}
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    if node is not None:
        _lines(node, (), lines)
    return yaml.safe_load(text), lines


# -- problems ---------------------------------------------------------------------------------
class _Collector:
    def __init__(self, lines: dict[tuple[str | int, ...], int]) -> None:
        self.lines = lines
        self.problems: list[JobProblem] = []

    def add(self, path: tuple[str | int, ...], message: str) -> None:
        line = None
        for n in range(len(path), -1, -1):
            line = self.lines.get(tuple(path[:n]))
            if line:
                break
        self.problems.append(JobProblem(tuple(path), message, line))


def _did_you_mean(word: str, candidates: list[str]) -> str:
    close = difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _schema_message(error: jsonschema.ValidationError) -> tuple[tuple[str | int, ...], str]:
    path = tuple(error.absolute_path)
    v = error.validator
    if v == "additionalProperties":
        known = sorted((error.schema.get("properties") or {}).keys())
        extra = [k for k in error.instance if k not in known] if isinstance(error.instance, dict) else []
        key = extra[0] if extra else "?"
        return (*path, key), f"unknown key {key!r}{_did_you_mean(key, known)} (known: {', '.join(known)})"
    if v == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        return (*path, missing), f"missing required key {missing!r}"
    if v == "type":
        expected = error.validator_value
        expected = " or ".join(expected) if isinstance(expected, list) else expected
        return path, f"expected {expected}, got {type(error.instance).__name__} {error.instance!r}"
    if v == "enum":
        return path, f"{error.instance!r} is not one of {', '.join(map(str, error.validator_value))}"
    if v in ("minimum", "maximum", "minItems", "minLength", "pattern", "const", "oneOf"):
        return path, f"invalid value {error.instance!r}: {error.message}"
    return path, error.message


def _resolve_providers(
    data: Any, path: tuple[str | int, ...], transformer: ConfigTransformer, out: _Collector, lenient: bool = False
) -> Any:
    if isinstance(data, dict):
        return {k: _resolve_providers(v, (*path, k), transformer, out, lenient) for k, v in data.items()}
    if isinstance(data, list):
        return [_resolve_providers(v, (*path, i), transformer, out, lenient) for i, v in enumerate(data)]
    if isinstance(data, str) and "${" in data:
        try:
            return transformer.transform({"value": data}).data["value"]
        except ConfigException as e:
            if not (lenient and path[:1] == ("source",)):
                out.add(path, str(e).removeprefix("value: "))
    return data


def _check_connectivity(job: dict[str, Any], out: _Collector) -> None:
    source = job.get("source") or {}
    host = source.get("database.hostname")
    if host:
        port = int(source.get("database.port") or (5432 if "postgres" in str(source.get("connector.class")) else 3306))
        try:
            with socket.create_connection((str(host), port), timeout=3):
                pass
        except OSError as e:
            out.add(
                ("source", "database.hostname"),
                f"cannot reach the database at {host}:{port} ({e.strerror or e}); "
                "check database.hostname/database.port and that the server is running",
            )
    sink = job.get("sink") or {}
    if sink.get("type") == "postgres" and sink.get("dsn"):
        import psycopg

        try:
            psycopg.connect(str(sink["dsn"]), connect_timeout=3).close()
        except psycopg.Error as e:
            out.add(("sink", "dsn"), f"cannot connect: {str(e).strip().splitlines()[0]}")


def _check_dsn(job: dict[str, Any], out: _Collector) -> None:
    sink = job.get("sink") or {}
    dsn = sink.get("dsn")
    if sink.get("type") != "postgres" or not isinstance(dsn, str):
        return
    from psycopg import conninfo

    try:
        conninfo.conninfo_to_dict(dsn)
    except Exception as e:
        out.add(("sink", "dsn"), f"not a valid PostgreSQL DSN ({str(e).strip()}); e.g. postgresql://user@host:5432/db")


def _check_sink(job: dict[str, Any], out: _Collector) -> None:
    """The Spark sink's own checks (tolerance without a dead-letter target, partitioning a
    target that cannot be partitioned, …) at validate time rather than mid-run."""
    try:
        from cdc_spark.apply.config import SinkConfig
        from cdc_spark.apply.errors import SinkConfigError
    except ImportError:
        return  # no Spark plugin here: `cdc run` reports that itself
    from cdc.jobs.run import sink_config

    spec = JobSpec(job["name"], job["source"], [], job.get("transport") or {}, job["sink"], job.get("spark") or {})
    try:
        SinkConfig.parse(sink_config(spec))
    except (SinkConfigError, ConfigException) as e:
        out.add(("sink",), str(e))


def _check_source(job: dict[str, Any], out: _Collector, registry: Any) -> None:
    from cdc.runtime.plugins import CONNECTOR_KINDS
    from cdc.runtime.validation import ConnectorValidator

    spec = JobSpec(job["name"], job["source"], job.get("transforms") or [], job.get("transport") or {})
    config = spec.connector_config()
    cls_name = str(job["source"]["connector.class"])
    try:
        registry.resolve(config["connector.class"], CONNECTOR_KINDS, "source.connector.class")
    except ConfigException:
        known = sorted(CONNECTOR_ALIASES)
        out.add(
            ("source", "connector.class"),
            f"unknown connector {cls_name!r}{_did_you_mean(cls_name.lower(), known)} "
            f"(short names: {', '.join(known)}; or a class installed as a cdc plugin)",
        )
        return
    known_keys: set[str] = set()
    for v in ConnectorValidator(registry).validate(config):
        known_keys.add(v.name)
        for err in v.errors:
            key = v.name
            if key.startswith(("transforms.", "predicates.")):
                out.add(("transforms",), err)
            elif key == "name":
                out.add(("name",), err)
            else:
                out.add(("source", key), err)
    for key in job["source"]:
        hint = _did_you_mean(key, sorted(known_keys - set(job["source"])))
        if key not in known_keys and hint:
            out.add(("source", key), f"unknown key {key!r}{hint}")


def validate_job_text(
    text: str,
    filename: str = "job.yaml",
    check_connectivity: bool = True,
    registry: Any = None,
    inspect_only: bool = False,
) -> tuple[JobSpec | None, list[JobProblem]]:
    """The job and its problems. `inspect_only` is for commands that read the job's state
    (status, offsets, topics): they never touch the database, so unresolved ${…} in `source`
    and the connector's own config checks do not stop them."""
    try:
        data, lines = _parse(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark else None
        problem = getattr(e, "problem", None) or str(e)
        return None, [JobProblem((), f"invalid YAML: {problem}", line)]
    out = _Collector(lines)
    if not isinstance(data, dict):
        return None, [JobProblem((), "a job must be a YAML mapping with name, source and sink", 1)]
    with ConfigTransformer.from_worker_config({}) as transformer:
        data = _resolve_providers(data, (), transformer, out, lenient=inspect_only)
    validator = jsonschema.Draft202012Validator(job_schema())
    for error in sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path))):
        if error.validator in ("if", "allOf"):
            continue
        path, message = _schema_message(error)
        out.add(path, message)
    _check_dsn(data, out)
    if not out.problems:
        _check_sink(data, out)
    if not out.problems and not inspect_only:
        if registry is None:
            from cdc.runtime.plugins import PluginRegistry

            registry = PluginRegistry.discover()
        _check_source(data, out, registry)
    if not out.problems and check_connectivity:
        _check_connectivity(data, out)
    if out.problems:
        return None, out.problems
    return (
        JobSpec(
            data["name"],
            data["source"],
            data.get("transforms") or [],
            data.get("transport") or {},
            data["sink"],
            data.get("spark") or {},
        ),
        [],
    )


def load_job(
    path: str | Path, check_connectivity: bool = False, registry: Any = None, inspect_only: bool = False
) -> JobSpec:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise ConfigException(f"{path}: cannot read the job file ({e.strerror}); check the path") from None
    job, problems = validate_job_text(text, str(path), check_connectivity, registry, inspect_only)
    if problems:
        raise JobError(str(path), problems)
    assert job is not None
    return job
