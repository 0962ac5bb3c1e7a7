"""Load and validate a job file, reporting every problem with its YAML path and line.

`cdc validate` prints all problems at once (a user fixes a file in one pass); `load_job`
raises on the first one for commands that need a valid job.
"""

from __future__ import annotations

import codecs
import datetime
import difflib
import json
import logging
import os
import socket
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from cdc.api.errors import ConfigException
from cdc.api.sensitive import HIDDEN, is_sensitive
from cdc.config.providers import ConfigTransformer
from cdc.jobs import source_db
from cdc.jobs.paths import format_path
from cdc.jobs.spec import CONNECTOR_ALIASES, JobSpec, source_family

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class JobProblem:
    path: tuple[str | int, ...]
    message: str
    line: int | None = None
    warning: bool = False  # worth a look, but the job runs

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


def _parse(text: str) -> tuple[Any, dict[tuple[str | int, ...], int], yaml.Node | None]:
    lines: dict[tuple[str | int, ...], int] = {}
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    if node is not None:
        _lines(node, (), lines)
    return yaml.safe_load(text), lines, node


_STR_TAG = "tag:yaml.org,2002:str"
_MERGE_TAG = "tag:yaml.org,2002:merge"


def _key_problems(node: yaml.Node, path: tuple[str | int, ...]) -> list[JobProblem]:
    """Keys YAML would mangle without a word: a repeated key (the last one silently wins) and a
    key that is not a string (`yes:` loads as a boolean, `5:` as a number, `~:` as null)."""
    problems: list[JobProblem] = []
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for k, v in node.value:
            line = k.start_mark.line + 1
            if not isinstance(k, yaml.ScalarNode) or k.tag not in (_STR_TAG, _MERGE_TAG):
                written = k.value if isinstance(k, yaml.ScalarNode) else "a collection"
                problems.append(
                    JobProblem(
                        path,
                        f"key {written!r} is not a string (YAML reads it as {k.tag.rsplit(':', 1)[-1]}); "
                        f"quote it: {json.dumps(str(written))}",
                        line,
                    )
                )
                continue
            if k.tag == _STR_TAG and k.value in seen:
                problems.append(
                    JobProblem(
                        (*path, k.value),
                        f"key {k.value!r} is given twice (lines {seen[k.value]} and {line}); keep one",
                        line,
                    )
                )
            seen.setdefault(k.value, line)
            problems += _key_problems(v, (*path, k.value))
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            problems += _key_problems(item, (*path, i))
    return problems


def read_job_text(path: str | Path) -> str:
    """The job file's text; UTF-8 (UTF-16/32 with a byte-order mark, as YAML allows)."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise ConfigException(f"{path}: cannot read the job file ({e.strerror}); check the path") from None
    boms = (
        (codecs.BOM_UTF32_LE, "utf-32"),
        (codecs.BOM_UTF32_BE, "utf-32"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    )
    encoding = next((enc for bom, enc in boms if data.startswith(bom)), "utf-8-sig")
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise ConfigException(
            f"{path}:{line}: the job file is not valid {encoding.removesuffix('-sig').upper()} "
            f"(byte 0x{data[e.start]:02x}); save it as UTF-8"
        ) from None


# -- problems ---------------------------------------------------------------------------------
class _Collector:
    def __init__(self, lines: dict[tuple[str | int, ...], int]) -> None:
        self.lines = lines
        self.problems: list[JobProblem] = []
        self.warnings: list[JobProblem] = []

    def add(self, path: tuple[str | int, ...], message: str) -> None:
        self.problems.append(JobProblem(tuple(path), message, self._line(path)))

    def warn(self, path: tuple[str | int, ...], message: str) -> None:
        self.warnings.append(JobProblem(tuple(path), message, self._line(path), warning=True))

    def _line(self, path: tuple[str | int, ...]) -> int | None:
        line = None
        for n in range(len(path), -1, -1):
            line = self.lines.get(tuple(path[:n]))
            if line:
                break
        return line


def _did_you_mean(word: str, candidates: list[str]) -> str:
    close = difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _schema_messages(error: jsonschema.ValidationError) -> list[tuple[tuple[str | int, ...], str]]:
    """One message per unknown key (jsonschema lists them all in one error), else one."""
    if error.validator != "additionalProperties" or not isinstance(error.instance, dict):
        return [_hide_secret(*_schema_message(error), error.instance)]
    known = sorted((error.schema.get("properties") or {}).keys())
    return [
        ((*error.absolute_path, key), f"unknown key {key!r}{_did_you_mean(key, known)} (known: {', '.join(known)})")
        for key in error.instance
        if key not in known
    ]


def _hide_secret(path: tuple[str | int, ...], message: str, value: Any) -> tuple[tuple[str | int, ...], str]:
    """The message without the value it quotes when the key is a secret (cdc.api.sensitive):
    `transport['ssl.keystore.password']: expected string, got int [hidden]`."""
    if any(isinstance(p, str) and is_sensitive(p) for p in path) and not isinstance(value, (dict, list)):
        for form in sorted({repr(value), str(value)}, key=len, reverse=True):
            message = message.replace(form, HIDDEN)
    return path, message


def _schema_message(error: jsonschema.ValidationError) -> tuple[tuple[str | int, ...], str]:
    path = tuple(error.absolute_path)
    v = error.validator
    expected = error.schema.get("x-expected") if isinstance(error.schema, dict) else None
    if "propertyNames" in error.schema_path:  # a key of the mapping, not a value, is wrong
        return (*path, error.instance), f"invalid key {error.instance!r}: {expected or error.message}"
    if expected and v != "type":
        return path, f"invalid value {error.instance!r}: {expected}"
    if v == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        return (*path, missing), f"missing required key {missing!r}"
    if v == "type":
        types = error.validator_value
        got = f"{type(error.instance).__name__} {error.instance!r}"
        if isinstance(error.instance, (datetime.date, datetime.time)):
            got = f"a date/time {str(error.instance)!r} (quote it to keep it as text)"
        return path, f"expected {' or '.join(types) if isinstance(types, list) else types}, got {got}"
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
        else:
            if problem := source_db.source_tls_problem(source):  # TLS keys set: log in as the connector will
                out.add(("source", problem[0]), problem[1])
    sink = job.get("sink") or {}
    # the warehouse: its dsn plus the sink's TLS keys
    if sink.get("type") == "postgres" and sink.get("dsn") and (problem := source_db.sink_problem(sink)):
        out.add(("sink", problem[0]), problem[1])


def _check_dsn(job: dict[str, Any], out: _Collector) -> None:
    sink = job.get("sink")
    dsn = sink.get("dsn") if isinstance(sink, dict) else None
    if not isinstance(dsn, str) or sink.get("type") != "postgres":
        return
    from psycopg import conninfo

    try:
        conninfo.conninfo_to_dict(dsn)
    except Exception as e:
        out.add(("sink", "dsn"), f"not a valid PostgreSQL DSN ({str(e).strip()}); e.g. postgresql://user@host:5432/db")


def _check_cluster(job: dict[str, Any], out: _Collector) -> None:
    """On a Spark cluster the executors read the topics and may write the target from other
    machines: the transport and the target must be reachable from there, not only from here."""
    master = str((job.get("spark") or {}).get("master", "local[2]"))
    if master.startswith("local"):  # local, local[N], local-cluster[…]: this machine
        return
    transport = job.get("transport") or {}
    if transport.get("type", "embedded") == "embedded":
        out.add(
            ("spark", "master"),
            f"spark.master {master!r} runs executors on other machines, and they cannot read the embedded "
            "transport (a SQLite file under state.dir on this one): set transport.type: kafka with "
            "bootstrap.servers, or use a local master (local[N])",
        )
    sink = job.get("sink") or {}
    if sink.get("type") == "postgres" and isinstance(sink.get("dsn"), str):
        from psycopg import conninfo

        try:
            host = conninfo.conninfo_to_dict(sink["dsn"]).get("host") or "localhost"
        except Exception:
            return  # _check_dsn reported it
        if any(h in ("localhost", "127.0.0.1", "::1") or h.startswith("/") for h in str(host).split(",")):
            out.warn(
                ("sink", "dsn"),
                f"host {host!r} is this machine, but on spark.master {master!r} the executors write to "
                "PostgreSQL from theirs: give a host name they can reach",
            )
    if sink.get("type") == "parquet" and "://" not in str(sink.get("path", "")):
        out.warn(
            ("sink", "path"),
            f"on spark.master {master!r} the executors write the Parquet changelog on their own machines: "
            "use a path on storage they share (hdfs://…, s3a://…, or a mount present on every node)",
        )


def _check_kafka_clients(job: dict[str, Any], out: _Collector) -> None:
    """The transport's Kafka client settings translate for librdkafka (a JKS truststore does not)."""
    transport = job.get("transport") or {}
    if transport.get("type") != "kafka":
        return
    from cdc.api.kafka_clients import librdkafka_config

    spec = JobSpec(job["name"], job["source"], [], transport)
    try:
        librdkafka_config(spec.kafka_security())
        librdkafka_config(transport.get("kafka") or {}, "kafka.")
    except ConfigException as e:
        name = e.name or ""
        path = ("transport", "kafka", name.removeprefix("kafka.")) if name.startswith("kafka.") else ("transport", name)
        out.add(path if name else ("transport",), str(e).removeprefix(f"{name}: "))


def _check_state_dir(job: dict[str, Any], out: _Collector) -> None:
    """`cdc run` creates state.dir and its lock there: say now when it cannot, not at start."""
    state_dir = Path(str((job.get("transport") or {}).get("state.dir", ".cdc")))
    existing = state_dir.absolute()
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        problem = f"{existing} is a file, not a directory"
    elif not os.access(existing, os.W_OK | os.X_OK):
        problem = f"{existing} is not writable"
    else:
        return
    out.add(
        ("transport", "state.dir"),
        f"cannot use {str(state_dir)!r} as state.dir: {problem}; choose a writable directory",
    )


def _check_source_name(job: dict[str, Any], out: _Collector) -> None:
    """The connector is named after the job; a different source.name would be silently replaced."""
    name = job["source"].get("name")
    if name is not None and str(name) != job["name"]:
        out.add(
            ("source", "name"),
            f"the source connector takes the job's name ({job['name']!r}), not {str(name)!r}; "
            "remove source.name, or rename the job",
        )


def _check_sink(job: dict[str, Any], out: _Collector) -> None:
    """The Spark sink's own checks (tolerance without a dead-letter target, partitioning a
    target that cannot be partitioned, …) at validate time rather than mid-run."""
    try:
        from cdc_spark.apply.config import SinkConfig
        from cdc_spark.apply.errors import SinkConfigError
    except ImportError:
        return  # no Spark plugin here: `cdc run` reports that itself
    from cdc.jobs.sink_config import sink_config

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
    validator = ConnectorValidator(registry)
    values = validator.validate(config)
    for v in values:
        for err in v.errors:
            key = v.name
            if key in ("transforms", "predicates") or key.startswith(("transforms.", "predicates.")):
                out.add(("transforms",), err)
            elif key == "name":
                out.add(("name",), err)
            else:
                out.add(("source", key), err)
    # Kafka Connect accepts an unknown key with a warning ("supplied but isn't a known config"); a
    # near miss of a known key is an error here (the job would run with the default), anything
    # else a warning. Pass-through keys (database.*, driver.*, …) count only as near misses.
    unknown = {u.name: u for u in validator.unknown_keys(config, values=values)}
    for key in job["source"]:
        u = unknown.get(key)
        if u is None:
            continue
        if u.suggestion:
            out.add(("source", key), f"unknown key {key!r}; did you mean {u.suggestion!r}?")
        else:
            out.warn(
                ("source", key),
                f"unknown key {key!r}: connector {cls_name!r} does not define it, so it is passed on and likely "
                "ignored; check the spelling, or remove it",
            )
    _report_unknown_transform_keys(job, unknown, out)


def _report_unknown_transform_keys(job: dict[str, Any], unknown: dict[str, Any], out: _Collector) -> None:
    """A transform's (or its predicate's) setting its SMT does not define: an error when it is a near
    miss of one it does (`regx` for `regex`), else a warning; JobSpec names them
    `transforms.<name>.<key>` and `predicates.<name>-predicate.<key>`."""
    for i, t in enumerate(job.get("transforms") or []):
        predicate = t.get("predicate") or {}
        where = (
            (f"transforms.{t.get('name')}.", ("transforms", i), t.get("type")),
            (f"predicates.{t.get('name')}-predicate.", ("transforms", i, "predicate"), predicate.get("type")),
        )
        for prefix, path, kind in where:
            for name, u in unknown.items():
                if not name.startswith(prefix):
                    continue
                key = name[len(prefix) :]
                if u.suggestion and u.suggestion.startswith(prefix):
                    out.add((*path, key), f"unknown key {key!r}; did you mean {u.suggestion[len(prefix) :]!r}?")
                else:
                    out.warn(
                        (*path, key),
                        f"unknown key {key!r}: {kind} does not define it, so it is ignored; check the "
                        "spelling, or remove it",
                    )


# -- transforms (SMTs) against what the Spark sink needs ---------------------------------------
# The sink applies Debezium change events: it groups and merges rows by the record key, reads
# the row from the envelope's before/after, orders by source and dispatches on op.
_ENVELOPE = ("before", "after", "source", "op")
# SMTs that replace the envelope with something else (Debezium's and Kafka's own).
_RESHAPING = ("ExtractNewRecordState", "ExtractNewDocumentState", "UnwrapFromEnvelope", "Flatten", "HoistField")
_RESHAPING_VALUE = ("ExtractField", "ValueToKey", "Cast", "SetSchemaMetadata")


def _debezium_source(job: dict[str, Any]) -> bool:
    cls = str(job["source"].get("connector.class", ""))
    return source_family(CONNECTOR_ALIASES.get(cls.lower(), cls)) is not None


def _list(value: Any) -> list[str]:
    if value is None:
        return []
    items = value if isinstance(value, list) else str(value).split(",")
    return [str(v).strip() for v in items if str(v).strip()]


def _check_transform_shapes(job: dict[str, Any], out: _Collector) -> None:
    """Key and value SMTs that would make the sink merge rows wrongly or fail mid-run."""
    for i, t in enumerate(job.get("transforms") or []):
        simple = str(t.get("type", "")).rsplit(".", 1)[-1]
        base, _, side = simple.partition("$")
        label = f"transform {t.get('name')!r} ({simple})"
        path: tuple[str | int, ...] = ("transforms", i)
        if base in _RESHAPING or (base in _RESHAPING_VALUE and side != "Key"):
            out.add(
                (*path, "type"),
                f"{label} reshapes the Debezium change event, but the Spark sink needs the envelope as the "
                "source writes it (before, after, source, op) to apply deletes, truncates and ordering; remove "
                "it (the sink already writes rows, not envelopes)",
            )
        elif base in ("ReplaceField", "MaskField") and side == "Key":
            out.add(
                path,
                f"{label} changes the record key, and the Spark sink merges rows by that key: a dropped or masked "
                "key column makes different rows one (silently losing rows), a renamed one leaves the target keyed "
                "by a column the source table does not have; remove it, and choose key columns with "
                "sink.tables.<db>.<table>.keys (or mask columns with source column.mask.* settings)",
            )
        elif base == "InsertField" and side == "Key":
            per_event = [k for k in ("offset.field", "timestamp.field") if t.get(k)]
            if per_event:
                out.add(
                    (*path, per_event[0]),
                    f"{label} adds {per_event[0]} to the record key: it differs for every event, so the Spark "
                    "sink never merges a row's changes (every update and delete becomes a row of its own); "
                    "remove it, or add the field to the value instead",
                )
            else:
                out.warn(
                    path,
                    f"{label} adds a field to the record key: the Spark sink keys the target by it too "
                    "(an extra key column the source table does not have)",
                )
        elif base == "ReplaceField" and side == "Value":
            _check_replace_value(t, path, label, out)
        elif base == "MaskField" and side == "Value":
            fields = _list(t.get("fields"))
            hit = [f for f in fields if f in _ENVELOPE]
            what = (
                f"masks {', '.join(hit)} of the Debezium envelope, which the Spark sink needs"
                if hit
                else f"masks top-level fields of the Debezium envelope, where {', '.join(fields) or 'they'} are not "
                "(the row's columns are inside before/after), so the source fails on every event"
            )
            out.add(
                (*path, "fields"),
                f"{label} {what}; remove it, and mask columns with the source's column.mask.with.<n>.chars or "
                "column.mask.hash.<algorithm>.with.salt.<salt> settings",
            )
        elif base == "InsertField" and side == "Value":
            out.warn(
                path,
                f"{label} adds a field to the Debezium envelope, not to the row (inside before/after), so the "
                "Spark sink never writes it; remove it",
            )
        elif base == "Filter":
            _check_filter(t, path, label, out)


def _check_replace_value(t: dict[str, Any], path: tuple[str | int, ...], label: str, out: _Collector) -> None:
    exclude = _list(t.get("exclude")) + _list(t.get("blacklist"))
    include = _list(t.get("include")) + _list(t.get("whitelist"))
    renames = [r.split(":", 1)[0] for r in _list(t.get("renames"))]
    advice = (
        "the row's columns are inside before/after, so drop columns with the source's column.exclude.list "
        "(or column.include.list)"
    )
    broken = [f for f in exclude + renames if f in _ENVELOPE]
    if include:
        broken += [f for f in _ENVELOPE if f not in include]
    if broken:
        key = next((k for k in ("exclude", "blacklist", "renames", "include", "whitelist") if k in t), "type")
        out.add(
            (*path, key),
            f"{label} removes or renames {', '.join(sorted(set(broken)))} of the Debezium envelope, which the "
            f"Spark sink needs (it would fail on every event); remove the transform: {advice}",
        )
    elif exclude or renames:
        out.warn(
            path,
            f"{label} works on the top level of the Debezium envelope (before, after, source, op, …), where "
            f"{', '.join(exclude + renames)} are not, so it changes nothing; {advice}",
        )


def _check_filter(t: dict[str, Any], path: tuple[str | int, ...], label: str, out: _Collector) -> None:
    predicate = t.get("predicate")
    if not predicate:
        out.add(path, f"{label} has no predicate, so it drops every event and the sink gets nothing; add one")
        return
    ptype = str(predicate.get("type", "")).rsplit(".", 1)[-1]
    if ptype == "RecordIsTombstone":
        if predicate.get("negate"):
            out.add(
                (*path, "predicate", "negate"),
                f"{label} with a negated RecordIsTombstone keeps only tombstones and drops every change event; "
                "remove negate (dropping tombstones is harmless: the sink ignores them)",
            )
    elif ptype == "HasHeaderKey":
        out.warn(
            path,
            f"{label} drops events by header, deletes and truncates included: a dropped change leaves the "
            "target different from the source (`cdc verify` reports it); to leave out whole tables use the "
            "source's table.exclude.list",
        )


def _check_topic_routes(job: dict[str, Any], out: _Collector, registry: Any) -> None:
    """Run the job's RegexRouter and Filter stages on each sink table's topic: the Spark sink reads
    only `<prefix>.<db>.<table>` topics, and keys sink.tables options by the routed topic."""
    transforms = job.get("transforms") or []
    if not any(str(t.get("type", "")).rsplit(".", 1)[-1] in ("RegexRouter", "Filter") for t in transforms):
        return
    import re

    from cdc.api.records import SourceRecord
    from cdc.jobs.topics import data_topic_pattern, topic_prefix
    from cdc.runtime.validation import ConnectorValidator
    from cdc.transforms.chain import build_transformation_chain
    from cdc.transforms.filter import Filter
    from cdc.transforms.regex_router import RegexRouter

    spec = JobSpec(job["name"], job["source"], transforms, job.get("transport") or {}, job.get("sink") or {})
    try:
        chain = build_transformation_chain(spec.connector_config(), ConnectorValidator(registry).resolve_for_chain)
    except Exception:  # an unknown class or bad setting: _check_source reports it
        return
    index = {str(t["name"]): i for i, t in enumerate(transforms)}
    prefix = topic_prefix(spec)
    pattern = re.compile(data_topic_pattern(prefix))
    tables = [t.source for t in spec.tables]
    samples = [(t, ("sink", "tables", t)) for t in tables] or [("db.table", ("transforms",))]
    routed: dict[str, str] = {}
    unread: set[int | None] = set()
    try:
        for table, _ in samples:
            topic = f"{prefix}.{table}"
            record: Any = SourceRecord(None, None, topic, value={})
            renamed_by = None
            for stage in chain.stages:
                if not isinstance(stage.transformation, (RegexRouter, Filter)):
                    continue
                before = record.topic
                record = stage.apply(record)
                i = index.get(stage.alias, 0)
                if record is None:
                    if tables:
                        out.add(
                            ("transforms", i),
                            f"transform {stage.alias!r} (Filter) drops every event of topic {before!r}, but "
                            f"sink.tables configures {table!r}: the table would get no changes (deletes and "
                            "truncates included); leave the table out with the source's table.exclude.list, "
                            "or remove it from sink.tables",
                        )
                    break
                if record.topic != before:
                    renamed_by = i
            else:
                if not pattern.fullmatch(record.topic):
                    if renamed_by in unread:
                        continue  # one problem per transform: the first table shows what it does
                    unread.add(renamed_by)
                    out.add(
                        ("transforms", renamed_by if renamed_by is not None else 0),
                        f"transform {transforms[renamed_by or 0]['name']!r} (RegexRouter) renames topic {topic!r} "
                        f"to {record.topic!r}, which the Spark sink never reads (it reads {prefix}.<db>.<table> "
                        "topics only): its changes would never be applied. Keep renamed topics in that shape, or "
                        f"remove the transform and name the target with sink.tables.{table}.target",
                    )
                elif tables and record.topic in routed.values():
                    other = next(t for t, r in routed.items() if r == record.topic)
                    out.warn(
                        ("transforms", renamed_by or 0),
                        f"RegexRouter sends {other!r} and {table!r} to one topic {record.topic!r}: the sink "
                        "applies both to one table, and rows with equal keys overwrite each other",
                    )
                routed[table] = record.topic
    finally:
        chain.close()


def validate_job_text(
    text: str,
    filename: str = "job.yaml",
    check_connectivity: bool = True,
    registry: Any = None,
    inspect_only: bool = False,
) -> tuple[JobSpec | None, list[JobProblem]]:
    """The job (None when invalid) and its problems, errors first; a problem marked `warning`
    does not make the job invalid. `inspect_only` is for commands that read the job's state
    (status, offsets, topics): they never touch the database, so unresolved ${…} in `source`
    and the connector's own config checks do not stop them."""
    try:
        data, lines, node = _parse(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark else None
        problem = getattr(e, "problem", None) or str(e)
        return None, [JobProblem((), f"invalid YAML: {problem}", line)]
    out = _Collector(lines)
    if not isinstance(data, dict):
        return None, [JobProblem((), "a job must be a YAML mapping with name, source and sink", 1)]
    if key_problems := _key_problems(node, ()) if node is not None else []:
        return None, key_problems
    with ConfigTransformer.from_worker_config({}) as transformer:
        data = _resolve_providers(data, (), transformer, out, lenient=inspect_only)
    validator = jsonschema.Draft202012Validator(job_schema())
    for error in sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path))):
        if error.validator in ("if", "allOf"):
            continue
        for path, message in _schema_messages(error):
            out.add(path, message)
    _check_dsn(data, out)
    if not out.problems:
        _check_cluster(data, out)
        _check_kafka_clients(data, out)
    if not out.problems:
        _check_sink(data, out)
    if not out.problems and not inspect_only:
        _check_state_dir(data, out)
        _check_source_name(data, out)
        if registry is None:
            from cdc.runtime.plugins import PluginRegistry

            registry = PluginRegistry.discover()
        _check_source(data, out, registry)
        if _debezium_source(data):  # the sink's needs below are those of Debezium's events and topics
            _check_transform_shapes(data, out)
            if not out.problems:
                _check_topic_routes(data, out, registry)
    if not out.problems and check_connectivity:
        _check_connectivity(data, out)
    if out.problems:
        return None, out.problems + out.warnings
    return (
        JobSpec(
            data["name"],
            data["source"],
            data.get("transforms") or [],
            data.get("transport") or {},
            data["sink"],
            data.get("spark") or {},
        ),
        out.warnings,
    )


def load_job(
    path: str | Path, check_connectivity: bool = False, registry: Any = None, inspect_only: bool = False
) -> JobSpec:
    text = read_job_text(path)
    job, problems = validate_job_text(text, str(path), check_connectivity, registry, inspect_only)
    if job is None:
        raise JobError(str(path), [p for p in problems if not p.warning])
    for p in problems:
        log.warning("%s", p.render(str(path)))
    return job
