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
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import avro.errors
import avro.schema

from cdc.log.base import LogError, TopicLog
from cdc.log.schema_compatibility import DEFAULT_LEVEL, LEVELS, check

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


class SchemaRegistryError(LogError):
    """A registry request that failed as Confluent's would: HTTP `status`, Confluent `error_code`."""

    def __init__(self, status: int, error_code: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.error_code = error_code
        self.message = message


def subject_not_found(subject: str) -> SchemaRegistryError:
    return SchemaRegistryError(404, 40401, f"Subject '{subject}' not found.")


def version_not_found(subject: str, version: object) -> SchemaRegistryError:
    return SchemaRegistryError(404, 40402, f"Version {version} not found for subject '{subject}'.")


def schema_not_found(what: str = "Schema") -> SchemaRegistryError:
    return SchemaRegistryError(404, 40403, f"{what} not found.")


def invalid_schema(message: str) -> SchemaRegistryError:
    return SchemaRegistryError(422, 42201, f"Invalid schema: {message}")


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
    schema_text: str, schema_type: str | None = "AVRO", normalize: bool = False, references: Sequence[Any] = ()
) -> ParsedSchema:
    """The schema checked and in its stored form; 42201 with Avro's reason if it is not one."""
    kind = (schema_type or "AVRO").upper()
    if kind not in SCHEMA_TYPES:
        raise invalid_schema(f"schemaType {kind} is not supported by the embedded registry; use AVRO")
    if references:
        raise invalid_schema("schema references are not supported by the embedded registry; inline the named types")
    if not isinstance(schema_text, str):
        raise invalid_schema(f"the schema must be a string of JSON, not {type(schema_text).__name__}")
    try:
        document = json.loads(schema_text)
    except ValueError as e:
        raise invalid_schema(f"the schema is not JSON ({e})") from None
    try:
        parsed = avro.schema.parse(schema_text)
    except (avro.errors.AvroException, ValueError, TypeError, KeyError) as e:
        raise invalid_schema(f"{type(e).__name__}: {e}") from None
    if normalize:
        text = json.dumps(parsed.to_json(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    else:
        text = json.dumps(document, separators=(",", ":"), ensure_ascii=False)
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

    def __init__(self, log_: EmbeddedLog) -> None:
        self._log = log_
        self.path = log_.path
        self._conn = log_.connect()
        self._lock = threading.RLock()  # one statement at a time on this connection (REST threads)
        self._parsed: dict[int, avro.schema.Schema] = {}  # by id: ids never change meaning
        self._ready = False
        self._closed = False
        try:
            version = self._read(lambda c: c.execute("SELECT value FROM sr_meta WHERE key='version'").fetchone(), None)
            if version is not None:
                self._check_version(int(version[0]))
        except BaseException:
            self._conn.close()
            raise

    def close(self) -> None:
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
                raise LogError(f"the schema registry of {self.path} is closed")
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
                raise LogError(f"the schema registry of {self.path} is closed")
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
    ) -> int:
        """Confluent's `POST /subjects/{subject}/versions`: the schema's id, a new version if it is not
        the subject's already; 409 if the subject's compatibility level refuses it."""
        return self.register_version(subject, schema_text, schema_type, normalize, references).id

    def register_version(
        self,
        subject: str,
        schema_text: str,
        schema_type: str | None = "AVRO",
        normalize: bool = False,
        references: Sequence[Any] = (),
    ) -> RegisteredVersion:
        """As `register`, with the subject version the schema has (new or existing)."""
        _check_subject(subject)
        parsed = parse_schema(schema_text, schema_type, normalize, references)
        return self._write(lambda conn: self._register_in_txn(conn, subject, parsed))

    def _register_in_txn(self, conn: sqlite3.Connection, subject: str, parsed: ParsedSchema) -> RegisteredVersion:
        rows = conn.execute(
            "SELECT v.version, v.schema_id, v.deleted, s.fingerprint, s.schema FROM sr_versions v "
            "JOIN sr_schemas s ON s.id = v.schema_id WHERE v.subject=? ORDER BY v.version",
            (subject,),
        ).fetchall()
        fingerprint = parsed.fingerprint
        live = [r for r in rows if not r[2]]
        for version, schema_id, _deleted, fp, _text in live:
            if fp == fingerprint:
                return RegisteredVersion(subject, version, schema_id, parsed.text, parsed.schema_type)
        level = self._level(conn, subject)
        failed = check(level, parsed.avro, [self._avro(r[1], r[4]) for r in live])
        if failed is not None:
            index, issues = failed
            details = ", ".join(i.render() for i in issues)
            raise SchemaRegistryError(
                409,
                409,
                f'Schema being registered is incompatible with an earlier schema for subject "{subject}", '
                f"details: [{details}, {{oldSchemaVersion: {live[index][0]}}}, {{compatibility: '{level}'}}]",
            )
        row = conn.execute("SELECT id FROM sr_schemas WHERE fingerprint=?", (fingerprint,)).fetchone()
        if row is None:
            schema_id = conn.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM sr_schemas").fetchone()[0]
            conn.execute(
                "INSERT INTO sr_schemas(id, schema_type, schema, fingerprint) VALUES (?,?,?,?)",
                (schema_id, parsed.schema_type, parsed.text, fingerprint),
            )
        else:
            schema_id = row[0]
        version = (rows[-1][0] if rows else 0) + 1
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
        parsed = parse_schema(schema_text, schema_type, normalize, references)

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
    ) -> list[str]:
        """Confluent's `POST /compatibility/subjects/{subject}/versions[/{version}]`: why the schema is
        incompatible under the subject's level ([] if it is compatible). A version (or `latest`) is
        checked alone; `version` None checks the live versions the level names (the versions-less path)."""
        parsed = parse_schema(schema_text, schema_type, normalize)
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
        failed = check(level, parsed.avro, [self._avro(r[1], r[2]) for r in against])
        if failed is None:
            return []
        index, issues = failed
        version_info = f"{{oldSchemaVersion: {against[index][0]}}}"
        return [*(i.render() for i in issues), version_info, f"{{compatibility: '{level}'}}"]

    def mode(self, subject: str | None = None) -> str:
        """Confluent's `GET /mode[/{subject}]`: always READWRITE (no IMPORT or READONLY here)."""
        return MODE


def _check_subject(subject: str) -> None:
    if not isinstance(subject, str) or not subject.strip():
        raise SchemaRegistryError(422, 42208, "Invalid subject name: a subject is a non-empty string")
    if any(ord(c) < 0x20 for c in subject):
        raise SchemaRegistryError(422, 42208, f"Invalid subject name {subject!r}: control characters are not allowed")


def open_schema_registry(log_: TopicLog) -> SchemaRegistryStore | None:
    """The registry in `log_`'s file when it is the embedded log; None for Kafka (users point
    `schema.registry.url` at their own registry there)."""
    from cdc.log.embedded import EmbeddedLog

    return SchemaRegistryStore(log_) if isinstance(log_, EmbeddedLog) else None
