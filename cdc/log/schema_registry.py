"""A Confluent Schema Registry kept in the embedded log's SQLite file (transport=embedded).

Confluent's registry keeps its schemas in the `_schemas` topic of the Kafka cluster it serves;
the embedded transport has no registry server, so the log file keeps them itself, in tables of
its own (`sr_*`, next to the log's `records`): a job's Avro records and the schemas they name
live and travel together. The semantics are Confluent's (schema-registry's
`KafkaSchemaRegistry`, `rest/exceptions/Errors.java`):

- schema ids are global: the same schema (type, text) has one id under every subject;
  registering a subject's live schema again returns its id and adds no version;
- versions count up per subject from 1; a delete is soft (the version stays readable with
  `deleted=True`) until a second, permanent delete removes it; a schema stays readable by id
  for good, since records in the log may still name it;
- compatibility is checked against the subject's live versions under the subject's level, or
  the global one (BACKWARD by default); the checks are cdc.log.schema_compatibility's;
- errors carry Confluent's HTTP status and `error_code` (40401 subject, 40402 version, 40403
  schema not found, 409 incompatible, 42201 invalid schema...) and a one-line message.

Schema text identity: the submitted JSON made compact, keys in their order (Confluent compares
Avro's canonical string, which also drops whitespace); with `normalize=True` the parsed schema
with keys sorted, so key order and `{"type":"int"}` vs `"int"` no longer matter. Only AVRO is
supported, without references (an error says so).

Concurrency: the store uses its own connection to the file and writes through the log's
`write()` (BEGIN IMMEDIATE, this process's writers queued, SQLite BUSY retried), so the
worker, `cdc topics read`, task processes and Spark executors may all use it at once: the
next id and version are read and written in one write transaction. Layout version: the
`sr_meta` table's `version` row (the log's own `user_version` is left alone, so a file with
these tables stays readable by a cdc that does not know them; a file whose registry tables are
newer than this code is refused). The tables are created by the first write, so opening the
store (`cdc status`, a Spark executor) takes no write lock.

Bounds (issue 33): a schema is untrusted input (anyone with the REST API may post one), so
`RegistryLimits` bound what one request may cost before any of it is parsed: its text size
(413), its JSON nesting depth (the Avro parser and checker recurse, so a deep schema would
otherwise end in RecursionError), its record fields and enum symbols (the parser's duplicate
check is quadratic in them), and the compatibility check's time (a check of two unions of
thousands of records is a cross product). Each refusal is one line naming the worker key
that raises the limit. The compatibility check runs outside the store's lock and outside any
SQLite transaction: the registration is then committed only if the subject's live versions
and level are still those it was checked against (else it is checked again), so a long check
never holds the log's write lock, and `close()` cancels a check in flight (503), so a
stopping worker does not wait for one.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

import avro.name
import avro.schema

from cdc.log.base import LogError, TopicLog
from cdc.log.schema_compatibility import DEFAULT_LEVEL, LEVELS, CheckAborted, Deadline, Incompatibility, check

if TYPE_CHECKING:
    from cdc.log.embedded import EmbeddedLog

T = TypeVar("T")

STORE_VERSION = 1
SCHEMA_TYPES = ("AVRO",)
MODE = "READWRITE"
_GLOBAL = ""  # the sr_config row of the global level (a subject name is never empty)
_MAX_VERSION = 2**31 - 1

_TABLES = (
    "CREATE TABLE IF NOT EXISTS sr_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS sr_schemas("
    " id INTEGER PRIMARY KEY, schema_type TEXT NOT NULL, schema TEXT NOT NULL, fingerprint TEXT NOT NULL UNIQUE)",
    "CREATE TABLE IF NOT EXISTS sr_versions("
    " subject TEXT NOT NULL, version INTEGER NOT NULL, schema_id INTEGER NOT NULL, deleted INTEGER NOT NULL DEFAULT 0,"
    " PRIMARY KEY(subject, version)) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS sr_versions_by_id ON sr_versions(schema_id)",
    "CREATE TABLE IF NOT EXISTS sr_config(subject TEXT PRIMARY KEY, compatibility TEXT NOT NULL) WITHOUT ROWID",
)


# The worker keys of the bounds (declared in cdc.runtime.worker_config, same defaults).
MAX_BYTES_KEY = "schema.registry.schema.max.bytes"
MAX_DEPTH_KEY = "schema.registry.schema.max.depth"
MAX_FIELDS_KEY = "schema.registry.schema.max.fields"
CHECK_TIMEOUT_KEY = "schema.registry.compatibility.timeout.ms"

_MESSAGE_MAX_CHARS = 500  # of a parser's reason quoted in an error (avro's may quote the whole schema)
_DETAILS_MAX = 20  # incompatibilities listed in one 409 or verbose compatibility answer


@dataclass(frozen=True)
class RegistryLimits:
    """What one schema may cost the registry. Defaults: Confluent's registry keeps a schema in one
    `_schemas` record, so 1 MiB (Kafka's default message.max.bytes) is its practical size; 64
    levels of JSON nesting, as the REST API allows in a request body (about 20 nested optional
    records; Python's recursion, not Jackson's 1000, is the ceiling here); 10,000 record fields
    and enum symbols (a Debezium envelope of MySQL's widest table, 4096 columns, has about 4,100);
    and 5 s for a compatibility check, task.shutdown.graceful.timeout.ms's default, so a check in
    flight never holds a stopping worker longer than a stopping task may."""

    max_bytes: int = 1_048_576
    max_depth: int = 64
    max_fields: int = 10_000
    check_timeout_ms: int = 5_000

    @classmethod
    def from_config(cls, config: Any) -> RegistryLimits:
        """The limits of a WorkerConfig (whose ConfigDef declares the keys, validated), or of a
        plain mapping of them; the defaults for keys a mapping lacks."""
        default = cls()

        def get(key: str, fallback: int) -> int:
            value = config.get(key)
            return fallback if value is None else int(value)

        return cls(
            get(MAX_BYTES_KEY, default.max_bytes),
            get(MAX_DEPTH_KEY, default.max_depth),
            get(MAX_FIELDS_KEY, default.max_fields),
            get(CHECK_TIMEOUT_KEY, default.check_timeout_ms),
        )


class SchemaRegistryError(LogError):
    """A registry request that failed as Confluent's would: HTTP `status`, Confluent `error_code`."""

    def __init__(self, status: int, error_code: int, message: str) -> None:
        message = printable(message)  # subjects and versions come from the URL: one line, always
        super().__init__(message)
        self.status = status
        self.error_code = error_code
        self.message = message


def printable(text: str) -> str:
    """`text` with its unprintable characters (line breaks, controls) escaped as Python does."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def subject_not_found(subject: str) -> SchemaRegistryError:
    return SchemaRegistryError(404, 40401, f"Subject '{subject}' not found.")


def version_not_found(subject: str, version: object) -> SchemaRegistryError:
    return SchemaRegistryError(404, 40402, f"Version {version} not found for subject '{subject}'.")


def schema_not_found(what: str = "Schema") -> SchemaRegistryError:
    return SchemaRegistryError(404, 40403, f"{what} not found.")


def invalid_schema(message: str) -> SchemaRegistryError:
    return SchemaRegistryError(422, 42201, f"Invalid schema: {message}")


def schema_too_large(size: int, limit: int) -> SchemaRegistryError:
    return SchemaRegistryError(
        413,
        413,
        f"Schema too large: {size} bytes, over {MAX_BYTES_KEY} ({limit} bytes): split it into smaller "
        f"schemas, or raise {MAX_BYTES_KEY} in the worker properties",
    )


def schema_too_deep(limit: int) -> SchemaRegistryError:
    return invalid_schema(
        f"it nests JSON objects and arrays deeper than {MAX_DEPTH_KEY} ({limit} levels): flatten it, "
        f"or raise {MAX_DEPTH_KEY} in the worker properties"
    )


def too_many_fields(count: int, limit: int) -> SchemaRegistryError:
    return invalid_schema(
        f"it has {count} record fields and enum symbols, over {MAX_FIELDS_KEY} ({limit}): split it, "
        f"or raise {MAX_FIELDS_KEY} in the worker properties"
    )


def check_timed_out(subject: str, limit_ms: int) -> SchemaRegistryError:
    return invalid_schema(
        f"checking its compatibility with subject '{subject}' took longer than {CHECK_TIMEOUT_KEY} "
        f"({limit_ms} ms) and was stopped: register a smaller change, set the subject's compatibility to "
        f"NONE, or raise {CHECK_TIMEOUT_KEY} in the worker properties"
    )


def registry_stopping(path: object) -> SchemaRegistryError:
    return SchemaRegistryError(
        503, 50301, f"The schema registry of {path} is closed (its worker is stopping): retry on a running worker"
    )


def request_cancelled() -> SchemaRegistryError:
    return SchemaRegistryError(503, 50302, "The request was cancelled (the client left): send it again")


def one_line(text: str, limit: int = _MESSAGE_MAX_CHARS) -> str:
    """`text` on one line (control characters as spaces) and at most `limit` characters."""
    flat = "".join(" " if ord(c) < 0x20 or c == "\x7f" else c for c in text[: limit + 1])
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def scan_document(document: Any, max_depth: int) -> tuple[bool, int]:
    """(whether `document` nests containers deeper than `max_depth`, its record fields and enum
    symbols), without recursion; stops at the first container past the depth."""
    count = 0
    stack: list[tuple[Any, int]] = [(document, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
            for key in ("fields", "symbols"):
                members = item.get(key)
                if isinstance(members, list):
                    count += len(members)
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > max_depth:
            return True, count
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False, count


def invalid_version(version: object) -> SchemaRegistryError:
    return SchemaRegistryError(
        422,
        42202,
        f"The specified version '{version}' is not a valid version id. "
        f'Allowed values are between [1, {_MAX_VERSION}] and the string "latest"',
    )


def invalid_level(level: object) -> SchemaRegistryError:
    return SchemaRegistryError(422, 42203, f"Invalid compatibility level {level!r}: use one of {', '.join(LEVELS)}")


@dataclass(frozen=True)
class RegisteredVersion:
    """One version of a subject: Confluent's `{"subject", "version", "id", "schema", "schemaType"}`."""

    subject: str
    version: int
    id: int
    schema: str
    schema_type: str = "AVRO"
    deleted: bool = False


@dataclass(frozen=True)
class ParsedSchema:
    text: str  # the stored form (see the module docstring)
    schema_type: str
    avro: avro.schema.Schema

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256(f"{self.schema_type}\n{self.text}".encode()).hexdigest()


def parse_schema(
    schema_text: str,
    schema_type: str | None = "AVRO",
    normalize: bool = False,
    references: Sequence[Any] = (),
    limits: RegistryLimits | None = None,
) -> ParsedSchema:
    """The schema checked and in its stored form; 42201 with Avro's reason if it is not one, 413 or
    42201 naming the limit if it is past one of `limits` (measured before Avro parses anything)."""
    limits = limits or RegistryLimits()
    kind = (schema_type or "AVRO").upper() if isinstance(schema_type, str) or schema_type is None else ""
    if kind not in SCHEMA_TYPES:
        shown = one_line(kind or str(schema_type), 60)
        raise invalid_schema(f"schemaType {shown} is not supported by the embedded registry; use AVRO")
    if references:
        raise invalid_schema("schema references are not supported by the embedded registry; inline the named types")
    if not isinstance(schema_text, str):
        raise invalid_schema(f"the schema must be a string of JSON, not {type(schema_text).__name__}")
    size = len(schema_text.encode("utf-8", "surrogatepass"))
    if size > limits.max_bytes:
        raise schema_too_large(size, limits.max_bytes)
    try:
        document = json.loads(schema_text)
    except RecursionError:
        raise schema_too_deep(limits.max_depth) from None
    except ValueError as e:
        raise invalid_schema(f"the schema is not JSON ({one_line(str(e))})") from None
    too_deep, fields = scan_document(document, limits.max_depth)
    if too_deep:
        raise schema_too_deep(limits.max_depth)
    if fields > limits.max_fields:
        raise too_many_fields(fields, limits.max_fields)
    try:
        parsed = avro.schema.make_avsc_object(document, avro.name.Names(validate_names=True))
        if normalize:
            text = json.dumps(parsed.to_json(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        else:
            text = json.dumps(document, separators=(",", ":"), ensure_ascii=False)
    except RecursionError:  # only if max.depth was raised past what Python's recursion allows
        raise schema_too_deep(limits.max_depth) from None
    except Exception as e:  # whatever Avro's parser raises on a bad document: the schema is invalid
        raise invalid_schema(one_line(f"{type(e).__name__}: {e}")) from None
    return ParsedSchema(text, kind, parsed)


def parse_version(value: int | str) -> int | None:
    """A version path parameter: its number, or None for `latest` (and -1, Confluent's alias for it)."""
    if isinstance(value, str):
        if value.strip().lower() == "latest":
            return None
        try:
            number = int(value.strip())
        except ValueError:
            raise invalid_version(value) from None
    else:
        number = int(value)
    if number == -1:
        return None
    if not 1 <= number <= _MAX_VERSION:
        raise invalid_version(value)
    return number


def _missing_tables(e: sqlite3.OperationalError) -> bool:
    return "no such table: sr_" in str(e)


class SchemaRegistryStore:
    """Confluent Schema Registry's subjects, versions, ids and configs in an EmbeddedLog's file."""

    def __init__(self, log_: EmbeddedLog, limits: RegistryLimits | None = None) -> None:
        self._log = log_
        self.path = log_.path
        self.limits = limits or RegistryLimits()
        self._conn = log_.connect()
        self._lock = threading.RLock()  # one statement at a time on this connection (REST threads)
        self._parsed: dict[int, avro.schema.Schema] = {}  # by id: ids never change meaning
        self._ready = False
        self._closed = False
        self._stopping = threading.Event()  # set first by close(): checks in flight give up
        try:
            version = self._read(lambda c: c.execute("SELECT value FROM sr_meta WHERE key='version'").fetchone(), None)
            if version is not None:
                self._check_version(int(version[0]))
        except BaseException:
            self._conn.close()
            raise

    def close(self) -> None:
        """Close the connection; a compatibility check in flight stops at once (its request gets 503)."""
        self._stopping.set()
        with self._lock:
            if not self._closed:
                self._closed = True
                self._conn.close()

    def _check_version(self, version: int) -> None:
        if version > STORE_VERSION:
            raise LogError(
                f"{self.path} holds schema registry tables of a newer cdc (version {version}; this one reads up to "
                f"{STORE_VERSION}); upgrade cdc, or choose another state.dir"
            )

    # -- connection plumbing -----------------------------------------------------------------
    def _read(self, body: Callable[[sqlite3.Connection], T], empty: T) -> T:
        """`body(conn)` as one consistent read (a deferred transaction); `empty` while the tables do not exist."""

        def attempt() -> T:
            self._conn.execute("BEGIN")
            try:
                return body(self._conn)
            finally:
                self._conn.execute("COMMIT")

        with self._lock:
            if self._closed:
                raise registry_stopping(self.path)
            try:
                return self._log.retrying(self._conn, attempt, "reading the schema registry of")
            except sqlite3.OperationalError as e:
                if _missing_tables(e):
                    return empty
                raise

    def _write(self, body: Callable[[sqlite3.Connection], T]) -> T:
        """`body(conn)` in one write transaction, after creating or checking the tables."""

        def in_txn(conn: sqlite3.Connection) -> T:
            if not self._ready:
                self._migrate(conn)
            return body(conn)

        with self._lock:
            if self._closed:
                raise registry_stopping(self.path)
            result = self._log.write(self._conn, in_txn, "writing the schema registry of")
            self._ready = True
            return result

    def _migrate(self, conn: sqlite3.Connection) -> None:
        exists = conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='sr_meta'").fetchone()
        if exists:
            row = conn.execute("SELECT value FROM sr_meta WHERE key='version'").fetchone()
            version = int(row[0]) if row else 0
            self._check_version(version)
            if version == STORE_VERSION:
                return
        for statement in _TABLES:
            conn.execute(statement)
        conn.execute("INSERT OR REPLACE INTO sr_meta(key, value) VALUES ('version', ?)", (str(STORE_VERSION),))

    def _avro(self, schema_id: int, text: str) -> avro.schema.Schema:
        parsed = self._parsed.get(schema_id)
        if parsed is None:
            parsed = self._parsed[schema_id] = avro.schema.parse(text)
        return parsed

    # -- registering -------------------------------------------------------------------------
    def register(
        self,
        subject: str,
        schema_text: str,
        schema_type: str | None = "AVRO",
        normalize: bool = False,
        references: Sequence[Any] = (),
        cancel: threading.Event | None = None,
    ) -> int:
        """Confluent's `POST /subjects/{subject}/versions`: the schema's id, a new version if it is not
        the subject's already; 409 if the subject's compatibility level refuses it."""
        return self.register_version(subject, schema_text, schema_type, normalize, references, cancel).id

    def register_version(
        self,
        subject: str,
        schema_text: str,
        schema_type: str | None = "AVRO",
        normalize: bool = False,
        references: Sequence[Any] = (),
        cancel: threading.Event | None = None,
    ) -> RegisteredVersion:
        """As `register`, with the subject version the schema has (new or existing). The check runs
        with no lock held, bounded by the limits' time and by `cancel` (the request's client left)."""
        _check_subject(subject)
        parsed = parse_schema(schema_text, schema_type, normalize, references, self.limits)
        deadline = self._deadline(cancel)
        state: _SubjectState = self._read(lambda conn: self._state(conn, subject), _SubjectState(DEFAULT_LEVEL, ()))
        while True:
            if state.live_version(parsed.fingerprint) is None:
                self._check(subject, state, parsed, deadline)
            outcome = self._write(partial(self._register_in_txn, subject=subject, parsed=parsed, checked=state))
            if isinstance(outcome, RegisteredVersion):
                return outcome
            state = outcome  # the subject changed while it was checked: check against what it is now

    def _deadline(self, cancel: threading.Event | None) -> Deadline:
        return Deadline(self.limits.check_timeout_ms / 1000, self._stopping, cancel)

    def _state(self, conn: sqlite3.Connection, subject: str) -> _SubjectState:
        rows = conn.execute(
            "SELECT v.version, v.schema_id, s.fingerprint, s.schema FROM sr_versions v "
            "JOIN sr_schemas s ON s.id = v.schema_id WHERE v.subject=? AND v.deleted=0 ORDER BY v.version",
            (subject,),
        ).fetchall()
        return _SubjectState(self._level(conn, subject), tuple(_Live(*r) for r in rows))

    def _check(self, subject: str, state: _SubjectState, parsed: ParsedSchema, deadline: Deadline) -> None:
        """409 if `parsed` is incompatible with the subject's live versions under its level."""
        live = state.live
        issues = self._run_check(
            subject, state.level, parsed, [(v.version, v.schema_id, v.schema) for v in live], deadline
        )
        if issues is not None:
            version, found = issues
            raise SchemaRegistryError(
                409,
                409,
                f'Schema being registered is incompatible with an earlier schema for subject "{subject}", '
                f"details: [{_render(found)}, {{oldSchemaVersion: {version}}}, {{compatibility: '{state.level}'}}]",
            )

    def _run_check(
        self,
        subject: str,
        level: str,
        parsed: ParsedSchema,
        against: Sequence[tuple[int, int, str]],
        deadline: Deadline,
    ) -> tuple[int, list[Incompatibility]] | None:
        """cdc.log.schema_compatibility.check against (version, id, text) rows: (the version it fails
        against, why), or None; its aborts and failures as the registry's one-line errors."""
        try:
            failed = check(level, parsed.avro, [self._avro(r[1], r[2]) for r in against], deadline)
        except CheckAborted as e:
            if e.timed_out:
                raise check_timed_out(subject, self.limits.check_timeout_ms) from None
            raise registry_stopping(self.path) if self._stopping.is_set() else request_cancelled() from None
        except RecursionError:
            raise schema_too_deep(self.limits.max_depth) from None
        except Exception as e:  # an Avro error on an odd pair of schemas: a refusal, not a 500
            raise invalid_schema(one_line(f"the compatibility check failed ({type(e).__name__}: {e})")) from None
        if failed is None:
            return None
        index, issues = failed
        return against[index][0], issues

    def _register_in_txn(
        self, conn: sqlite3.Connection, subject: str, parsed: ParsedSchema, checked: _SubjectState
    ) -> RegisteredVersion | _SubjectState:
        """Commit the registration if the subject is still as it was checked; else what it is now."""
        state = self._state(conn, subject)
        fingerprint = parsed.fingerprint
        existing = state.live_version(fingerprint)
        if existing is not None:
            return RegisteredVersion(subject, existing.version, existing.schema_id, parsed.text, parsed.schema_type)
        if state.key != checked.key:
            return state
        row = conn.execute("SELECT id FROM sr_schemas WHERE fingerprint=?", (fingerprint,)).fetchone()
        if row is None:
            schema_id = conn.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM sr_schemas").fetchone()[0]
            conn.execute(
                "INSERT INTO sr_schemas(id, schema_type, schema, fingerprint) VALUES (?,?,?,?)",
                (schema_id, parsed.schema_type, parsed.text, fingerprint),
            )
        else:
            schema_id = row[0]
        last = conn.execute("SELECT MAX(version) FROM sr_versions WHERE subject=?", (subject,)).fetchone()[0]
        version = (last or 0) + 1
        conn.execute(
            "INSERT INTO sr_versions(subject, version, schema_id, deleted) VALUES (?,?,?,0)",
            (subject, version, schema_id),
        )
        return RegisteredVersion(subject, version, schema_id, parsed.text, parsed.schema_type)

    def lookup(
        self,
        subject: str,
        schema_text: str,
        schema_type: str | None = "AVRO",
        normalize: bool = False,
        deleted: bool = False,
        references: Sequence[Any] = (),
    ) -> RegisteredVersion:
        """Confluent's `POST /subjects/{subject}`: the version holding this schema; 40401 / 40403."""
        parsed = parse_schema(schema_text, schema_type, normalize, references, self.limits)

        def body(conn: sqlite3.Connection) -> RegisteredVersion | None:
            return self._lookup(conn, subject, parsed.fingerprint, deleted)

        found = self._read(body, None)
        if found is None:
            raise schema_not_found() if self.versions(subject, deleted=True) else subject_not_found(subject)
        return found

    def _lookup(
        self, conn: sqlite3.Connection, subject: str, fingerprint: str, deleted: bool
    ) -> RegisteredVersion | None:
        row = conn.execute(
            "SELECT v.version, v.schema_id, s.schema, s.schema_type, v.deleted FROM sr_versions v "
            "JOIN sr_schemas s ON s.id = v.schema_id WHERE v.subject=? AND s.fingerprint=? AND (v.deleted=0 OR ?) "
            "ORDER BY v.deleted, v.version DESC LIMIT 1",
            (subject, fingerprint, int(deleted)),
        ).fetchone()
        if row is None:
            return None
        return RegisteredVersion(subject, row[0], row[1], row[2], row[3], bool(row[4]))

    # -- reading -----------------------------------------------------------------------------
    def schema(self, schema_id: int) -> RegisteredVersion:
        """Confluent's `GET /schemas/ids/{id}` (subject and version of its first registration); 40403."""
        row = self._read(
            lambda conn: conn.execute(
                "SELECT s.schema, s.schema_type, v.subject, v.version FROM sr_schemas s "
                "LEFT JOIN sr_versions v ON v.schema_id = s.id WHERE s.id=? ORDER BY v.deleted, v.subject, v.version "
                "LIMIT 1",
                (schema_id,),
            ).fetchone(),
            None,
        )
        if row is None:
            raise schema_not_found(f"Schema {schema_id}")
        return RegisteredVersion(row[2] or "", row[3] or 0, schema_id, row[0], row[1])

    def schema_versions(self, schema_id: int, deleted: bool = False) -> list[tuple[str, int]]:
        """Confluent's `GET /schemas/ids/{id}/versions`: the (subject, version) pairs holding it; 40403."""
        rows = self._read(
            lambda conn: (
                conn.execute("SELECT 1 FROM sr_schemas WHERE id=?", (schema_id,)).fetchone(),
                conn.execute(
                    "SELECT subject, version FROM sr_versions WHERE schema_id=? AND (deleted=0 OR ?) "
                    "ORDER BY subject, version",
                    (schema_id, int(deleted)),
                ).fetchall(),
            ),
            (None, []),
        )
        if rows[0] is None:
            raise schema_not_found(f"Schema {schema_id}")
        return [(s, v) for s, v in rows[1]]

    def schema_subjects(self, schema_id: int, deleted: bool = False) -> list[str]:
        """Confluent's `GET /schemas/ids/{id}/subjects`; 40403."""
        return sorted({s for s, _ in self.schema_versions(schema_id, deleted)})

    def subjects(self, prefix: str = "", deleted: bool = False, deleted_only: bool = False) -> list[str]:
        """Confluent's `GET /subjects`: subjects with a live version (`deleted`: any version;
        `deleted_only`: only soft-deleted ones), sorted."""
        if deleted_only:
            query = "SELECT subject FROM sr_versions GROUP BY subject HAVING MIN(deleted)=1 ORDER BY subject"
        elif deleted:
            query = "SELECT DISTINCT subject FROM sr_versions ORDER BY subject"
        else:
            query = "SELECT DISTINCT subject FROM sr_versions WHERE deleted=0 ORDER BY subject"
        rows = self._read(lambda conn: conn.execute(query).fetchall(), [])
        return [r[0] for r in rows if r[0].startswith(prefix)]

    def versions(self, subject: str, deleted: bool = False, deleted_only: bool = False) -> list[int]:
        """The subject's version numbers (live, or with soft-deleted ones), ascending; [] if none."""
        where = "deleted=1" if deleted_only else ("1" if deleted else "deleted=0")
        rows = self._read(
            lambda conn: conn.execute(
                f"SELECT version FROM sr_versions WHERE subject=? AND {where} ORDER BY version", (subject,)
            ).fetchall(),
            [],
        )
        return [r[0] for r in rows]

    def version(self, subject: str, version: int | str = "latest", deleted: bool = False) -> RegisteredVersion:
        """Confluent's `GET /subjects/{subject}/versions/{version}`; 40401, 40402, 42202."""
        number = parse_version(version)

        def body(conn: sqlite3.Connection) -> tuple[bool, tuple | None]:
            known = conn.execute(
                "SELECT 1 FROM sr_versions WHERE subject=? AND (deleted=0 OR ?) LIMIT 1", (subject, int(deleted))
            ).fetchone()
            query = (
                "SELECT v.version, v.schema_id, s.schema, s.schema_type, v.deleted FROM sr_versions v "
                "JOIN sr_schemas s ON s.id = v.schema_id WHERE v.subject=? AND (v.deleted=0 OR ?) "
            )
            if number is None:
                row = conn.execute(query + "ORDER BY v.version DESC LIMIT 1", (subject, int(deleted))).fetchone()
            else:
                row = conn.execute(query + "AND v.version=?", (subject, int(deleted), number)).fetchone()
            return known is not None, row

        known, row = self._read(body, (False, None))
        if not known:
            raise subject_not_found(subject)
        if row is None:
            raise version_not_found(subject, version)
        return RegisteredVersion(subject, row[0], row[1], row[2], row[3], bool(row[4]))

    # -- deleting ----------------------------------------------------------------------------
    def delete_version(self, subject: str, version: int | str, permanent: bool = False) -> int:
        """Confluent's `DELETE /subjects/{subject}/versions/{version}`: soft, then `permanent`; the version."""
        number = parse_version(version)

        def body(conn: sqlite3.Connection) -> int:
            rows = dict(conn.execute("SELECT version, deleted FROM sr_versions WHERE subject=?", (subject,)).fetchall())
            if not rows:
                raise subject_not_found(subject)
            target = number
            if target is None:
                live = [v for v, d in rows.items() if not d]
                if not live:
                    raise subject_not_found(subject)
                target = max(live)
            if target not in rows:
                raise version_not_found(subject, version)
            if permanent:
                if not rows[target]:
                    raise SchemaRegistryError(
                        404,
                        40407,
                        f"Subject '{subject}' Version {target} was not deleted first before being permanently "
                        "deleted: delete it without permanent=true first",
                    )
                conn.execute("DELETE FROM sr_versions WHERE subject=? AND version=?", (subject, target))
            else:
                if rows[target]:
                    raise SchemaRegistryError(
                        404,
                        40406,
                        f"Subject '{subject}' Version {target} was soft deleted. Set permanent=true to delete "
                        "permanently",
                    )
                conn.execute("UPDATE sr_versions SET deleted=1 WHERE subject=? AND version=?", (subject, target))
            return target

        return self._write(body)

    def delete_subject(self, subject: str, permanent: bool = False) -> list[int]:
        """Confluent's `DELETE /subjects/{subject}`: every version, soft, then `permanent`; their numbers."""

        def body(conn: sqlite3.Connection) -> list[int]:
            rows = conn.execute(
                "SELECT version, deleted FROM sr_versions WHERE subject=? ORDER BY version", (subject,)
            ).fetchall()
            if not rows:
                raise subject_not_found(subject)
            live = [v for v, d in rows if not d]
            if permanent:
                if live:
                    raise SchemaRegistryError(
                        404,
                        40405,
                        f"Subject '{subject}' was not deleted first before being permanently deleted: "
                        "delete it without permanent=true first",
                    )
                conn.execute("DELETE FROM sr_versions WHERE subject=?", (subject,))
                conn.execute("DELETE FROM sr_config WHERE subject=?", (subject,))
                return [v for v, _ in rows]
            if not live:
                raise SchemaRegistryError(
                    404, 40404, f"Subject '{subject}' was soft deleted. Set permanent=true to delete permanently"
                )
            conn.execute("UPDATE sr_versions SET deleted=1 WHERE subject=?", (subject,))
            return live

        return self._write(body)

    # -- compatibility -----------------------------------------------------------------------
    def _level(self, conn: sqlite3.Connection, subject: str) -> str:
        row = conn.execute(
            "SELECT compatibility FROM sr_config WHERE subject IN (?, ?) ORDER BY subject = ? LIMIT 1",
            (subject, _GLOBAL, _GLOBAL),
        ).fetchone()
        return row[0] if row else DEFAULT_LEVEL

    def compatibility(self, subject: str | None = None, default_to_global: bool = False) -> str:
        """Confluent's `GET /config[/{subject}]`; 40408 for a subject with no level of its own
        (unless `default_to_global`)."""
        key = subject or _GLOBAL
        rows = dict(
            self._read(
                lambda conn: conn.execute(
                    "SELECT subject, compatibility FROM sr_config WHERE subject IN (?, ?)", (key, _GLOBAL)
                ).fetchall(),
                [],
            )
        )
        if key in rows:
            return str(rows[key])
        if subject and not default_to_global:
            raise SchemaRegistryError(
                404,
                40408,
                f"Subject '{subject}' does not have subject-level compatibility configured: "
                "ask with defaultToGlobal=true for the level in force",
            )
        return str(rows.get(_GLOBAL, DEFAULT_LEVEL))

    def set_compatibility(self, level: str, subject: str | None = None) -> str:
        """Confluent's `PUT /config[/{subject}]`; 42203 for an unknown level."""
        value = level.strip().upper() if isinstance(level, str) else level
        if value not in LEVELS:
            raise invalid_level(level)
        if subject is not None:
            _check_subject(subject)
        self._write(
            lambda conn: conn.execute(
                "INSERT OR REPLACE INTO sr_config(subject, compatibility) VALUES (?,?)", (subject or _GLOBAL, value)
            )
        )
        return str(value)

    def delete_compatibility(self, subject: str | None = None) -> str:
        """Confluent's `DELETE /config[/{subject}]`: the level that was set (the global one returns to BACKWARD)."""
        key = subject or _GLOBAL

        def body(conn: sqlite3.Connection) -> str:
            row = conn.execute("SELECT compatibility FROM sr_config WHERE subject=?", (key,)).fetchone()
            if row is None:
                if subject:
                    raise SchemaRegistryError(
                        404, 40408, f"Subject '{subject}' does not have subject-level compatibility configured"
                    )
                return DEFAULT_LEVEL
            conn.execute("DELETE FROM sr_config WHERE subject=?", (key,))
            return str(row[0])

        return self._write(body)

    def test_compatibility(
        self,
        subject: str,
        schema_text: str,
        version: int | str | None = "latest",
        schema_type: str | None = "AVRO",
        normalize: bool = False,
        cancel: threading.Event | None = None,
    ) -> list[str]:
        """Confluent's `POST /compatibility/subjects/{subject}/versions[/{version}]`: why the schema is
        incompatible under the subject's level ([] if it is compatible). A version (or `latest`) is
        checked alone; `version` None checks the live versions the level names (the versions-less path).
        Bounded as `register_version`'s check."""
        parsed = parse_schema(schema_text, schema_type, normalize, (), self.limits)
        number = None if version is None else parse_version(version)

        def body(conn: sqlite3.Connection) -> tuple[str, list[tuple[int, int, str]]]:
            rows = conn.execute(
                "SELECT v.version, v.schema_id, s.schema FROM sr_versions v JOIN sr_schemas s ON s.id = v.schema_id "
                "WHERE v.subject=? AND v.deleted=0 ORDER BY v.version",
                (subject,),
            ).fetchall()
            return self._level(conn, subject), rows

        level, rows = self._read(body, (DEFAULT_LEVEL, []))
        if not rows:
            raise subject_not_found(subject)
        if version is None:
            against = rows  # the level decides: the last one, or every one for a _TRANSITIVE level
        elif number is None:
            against = rows[-1:]
        else:
            against = [r for r in rows if r[0] == number]
            if not against:
                raise version_not_found(subject, version)
        failed = self._run_check(subject, level, parsed, against, self._deadline(cancel))
        if failed is None:
            return []
        version, issues = failed
        shown = [i.render() for i in issues[:_DETAILS_MAX]]
        if len(issues) > _DETAILS_MAX:
            shown.append(f"… and {len(issues) - _DETAILS_MAX} more")
        return [*shown, f"{{oldSchemaVersion: {version}}}", f"{{compatibility: '{level}'}}"]

    def mode(self, subject: str | None = None) -> str:
        """Confluent's `GET /mode[/{subject}]`: always READWRITE (no IMPORT or READONLY here)."""
        return MODE


@dataclass(frozen=True)
class _Live:
    """A live version of a subject, as a registration checks against it."""

    version: int
    schema_id: int
    fingerprint: str
    schema: str


@dataclass(frozen=True)
class _SubjectState:
    """A subject's level and live versions: what a registration's compatibility verdict depends on."""

    level: str
    live: tuple[_Live, ...]

    @property
    def key(self) -> tuple[str, tuple[int, ...]]:
        return self.level, tuple(v.schema_id for v in self.live)

    def live_version(self, fingerprint: str) -> _Live | None:
        return next((v for v in self.live if v.fingerprint == fingerprint), None)


def _render(issues: Sequence[Incompatibility]) -> str:
    """Confluent's details of a 409, the first few of them (a wide schema may have thousands)."""
    shown = ", ".join(i.render() for i in issues[:_DETAILS_MAX])
    more = len(issues) - _DETAILS_MAX
    return shown + (f", … and {more} more" if more > 0 else "")


def _check_subject(subject: str) -> None:
    if not isinstance(subject, str) or not subject.strip():
        raise SchemaRegistryError(422, 42208, "Invalid subject name: a subject is a non-empty string")
    if any(ord(c) < 0x20 for c in subject):
        raise SchemaRegistryError(422, 42208, f"Invalid subject name {subject!r}: control characters are not allowed")


def open_schema_registry(log_: TopicLog, limits: RegistryLimits | None = None) -> SchemaRegistryStore | None:
    """The registry in `log_`'s file when it is the embedded log; None for Kafka (users point
    `schema.registry.url` at their own registry there). `limits`: RegistryLimits.from_config of
    the worker's config (the defaults if None)."""
    from cdc.log.embedded import EmbeddedLog

    return SchemaRegistryStore(log_, limits) if isinstance(log_, EmbeddedLog) else None
