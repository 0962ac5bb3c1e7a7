"""The Iceberg catalog of the sink's `catalog` mapping: the one place that checks it and opens it
(the sink's IcebergTarget, `cdc verify`'s reader and the tests all come here).

The mapping holds pyiceberg's own catalog properties, as its docs and `.pyiceberg.yaml` spell
them, and goes to pyiceberg's `load_catalog`: `type` (rest, sql, glue, hive, dynamodb,
in-memory, bigquery: pyiceberg's list) or `py-catalog-impl` (a Catalog class of one's own),
`uri`, `warehouse`, `credential`, `token`, `s3.*`, nested `auth:`/`ssl:` mappings… One key is
the sink's: `name` (default `cdc`), the catalog's name. pyiceberg uses it to find
`PYICEBERG_CATALOG__<NAME>__*` environment variables and `.pyiceberg.yaml` entries (merged
under the mapping, so a secret can stay out of the job file), and a SQL catalog stores it with
every table, so changing it hides the tables created before.

Before `type` existed the sink always opened a SqlCatalog: a mapping without `type` whose `uri`
has a SQLAlchemy scheme (`sqlite:`, `postgresql+psycopg:`, `mysql+pymysql:`…) still is one;
an http(s) `uri` means REST and a thrift one Hive, as pyiceberg infers.

Problems are found before anything connects, each one line that names the key and the fix: an
unknown type, a type without the `uri` it needs, a catalog whose Python module is not installed
(with the pip extra of pyiceberg that brings it). Secrets never show: a key `cdc.api.sensitive`
calls secret (credential, token, *secret*, *password*…) is named but its value never quoted, a
URI's password is hidden, and a library's error text has every secret value replaced.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from cdc.api.sensitive import HIDDEN, is_sensitive, secret_values
from cdc_spark.apply.errors import CatalogOpenError, SinkConfigError, one_line

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog

NAME, TYPE, IMPL, URI, WAREHOUSE = "name", "type", "py-catalog-impl", "uri", "warehouse"
DEFAULT_NAME = "cdc"
# SQLAlchemy dialects: a `uri` of one of them (optionally `+driver`) without `type` is a SQL catalog.
SQL_SCHEMES = ("sqlite", "postgresql", "mysql", "mariadb", "oracle", "mssql")
# What a catalog type needs beyond pyiceberg's own dependencies: (module, pip extra of pyiceberg).
_NEEDS = {
    "sql": ("sqlalchemy", "sql-sqlite"),
    "in-memory": ("sqlalchemy", "sql-sqlite"),
    "hive": ("thrift", "hive"),
    "glue": ("boto3", "glue"),
    "dynamodb": ("boto3", "dynamodb"),
    "bigquery": ("google.cloud.bigquery", "bigquery"),
}
_SIGV4 = "rest.sigv4-enabled"  # REST requests signed with AWS SigV4 (boto3: the rest-sigv4 extra)
_SQL_EXAMPLE = "sqlite:////lake/catalog.db or postgresql+psycopg://user@host/db"
_REST_EXAMPLE = "https://catalog.example.com/api/catalog"


@dataclass(frozen=True)
class CatalogSpec:
    """A checked `catalog` mapping: the catalog's name, its type and what `load_catalog` gets."""

    name: str
    type: str | None  # None: the `py-catalog-impl` class decides
    properties: Mapping[str, Any]  # pyiceberg's properties, `type` filled in when it was implied

    @property
    def uri(self) -> str:
        return str(self.properties.get(URI) or "")

    @property
    def sqlite_file(self) -> str | None:
        """The SQLite file of a SQL catalog in one (None for any other catalog, or in memory)."""
        if self.type != "sql" or not self.uri.startswith("sqlite:///"):
            return None
        return self.uri.removeprefix("sqlite:///").split("?", 1)[0] or None

    def describe(self) -> str:
        """`catalog cdc (type rest, uri https://…)` for messages: no secret in it."""
        kind = f"type {self.type}" if self.type else f"{IMPL} {self.properties.get(IMPL)}"
        uri = f", uri {shown_uri(self.uri)}" if self.uri else ""
        return f"catalog {self.name} ({kind}{uri})"

    def hide(self, text: str) -> str:
        """`text` with every secret of the catalog (and the URI's password) replaced by [hidden]."""
        secrets = set(secret_values(_flat(self.properties)))
        password = urlsplit(self.uri).password if "://" in self.uri else None
        if password:
            secrets.add(password)
        for secret in sorted((s for s in secrets if len(s) >= 4), key=len, reverse=True):
            text = text.replace(secret, HIDDEN)
        return text


def known_types() -> tuple[str, ...]:
    """pyiceberg's catalog types, as its `load_catalog` takes them in `type`."""
    from pyiceberg.catalog import CatalogType

    return tuple(t.value for t in CatalogType)


def catalog_properties(catalog: Mapping[Any, Any]) -> dict[str, Any]:
    """The mapping as pyiceberg's properties: string keys and values (YAML's true as `true`), nested
    mappings (`auth:`, `ssl:`) kept nested, unset (null) values left out."""
    out: dict[str, Any] = {}
    for key, value in catalog.items():
        if value is None:
            continue
        if isinstance(value, Mapping):
            out[str(key)] = catalog_properties(value)
        elif isinstance(value, bool):
            out[str(key)] = str(value).lower()
        else:
            out[str(key)] = str(value)
    return out


def implied_type(catalog: Mapping[str, Any]) -> str | None:
    """The catalog type the mapping names or its `uri` implies (None: neither, or `py-catalog-impl`).

    For callers that fill in defaults (a SQL catalog's warehouse); `parse_catalog` checks."""
    if catalog.get(IMPL):
        return None
    if catalog.get(TYPE):
        return str(catalog[TYPE]).strip().lower()
    scheme = urlsplit(str(catalog.get(URI) or "")).scheme.lower().split("+", 1)[0]
    if scheme in SQL_SCHEMES:
        return "sql"
    return {"http": "rest", "https": "rest", "thrift": "hive"}.get(scheme)


def parse_catalog(catalog: Mapping[Any, Any]) -> CatalogSpec:
    """The checked catalog; SinkConfigError names the key and the fix (never a secret's value).

    Checked against what `load_catalog` will see: the mapping over pyiceberg's environment
    variables and `.pyiceberg.yaml` for the catalog's name."""
    from pyiceberg.utils.config import Config, merge_config

    props = catalog_properties(catalog)
    name = str(props.pop(NAME, DEFAULT_NAME)).strip()
    if not name:
        raise SinkConfigError(f"catalog.{NAME} must be a non-empty name (default {DEFAULT_NAME}): the catalog's name")
    merged = merge_config(Config().get_catalog_config(name) or {}, props)
    if merged.get(IMPL):
        if merged.get(TYPE):
            raise SinkConfigError(
                f"catalog: {TYPE} and {IMPL} exclude each other (pyiceberg takes one): drop {TYPE} to use your "
                f"class {merged[IMPL]}, or drop {IMPL}"
            )
        return CatalogSpec(name, None, props)
    kind = implied_type(merged)
    types = known_types()
    listed = ", ".join(types)
    if kind is None:
        uri = str(merged.get(URI) or "")
        if not uri:
            raise SinkConfigError(
                "target=iceberg: catalog needs uri (a SQL catalog's database, e.g. sqlite:////lake/catalog.db, "
                f"with warehouse) or type (one of {listed}) with the properties it takes"
            )
        raise SinkConfigError(
            f"catalog.uri {shown_uri(uri)}: the catalog type cannot be told from its scheme; set catalog.type "
            f"(one of {listed}), or give a SQLAlchemy URL ({_SQL_EXAMPLE}) for a SQL catalog"
        )
    if kind not in types:
        raise SinkConfigError(
            f"catalog.type={kind!r} is not a pyiceberg catalog type: use one of {listed}, or {IMPL} "
            "(module.Class) for a catalog class of your own"
        )
    if not merged.get(TYPE):
        props[TYPE] = kind
    spec = CatalogSpec(name, kind, props)
    _check_uri(spec, str(merged.get(URI) or ""))
    _check_installed(kind, merged)
    return spec


def open_catalog(catalog: Mapping[Any, Any] | CatalogSpec) -> Catalog:
    """The pyiceberg Catalog (`load_catalog`), or one line naming what to fix: a SinkConfigError for
    a setting or a missing module, a CatalogOpenError for a catalog that does not answer or refuses.

    The library's own exception is not chained: its text or its arguments may hold a secret."""
    from pyiceberg.catalog import load_catalog
    from pyiceberg.exceptions import NotInstalledError

    spec = catalog if isinstance(catalog, CatalogSpec) else parse_catalog(catalog)
    _make_sqlite_directory(spec.properties.get(URI))
    try:
        return load_catalog(spec.name, **spec.properties)
    except NotInstalledError as e:  # pyiceberg's text names its pip extra
        raise SinkConfigError(f"{spec.describe()}: {spec.hide(str(e))}") from None
    except ImportError as e:
        raise SinkConfigError(
            f"{spec.describe()} needs the Python module {e.name or e}, which is not installed: pip install it "
            "(for a SQL catalog, the SQLAlchemy driver of catalog.uri)"
        ) from None
    except Exception as e:
        raise CatalogOpenError(spec.describe(), spec.hide(one_line(e))) from None


def _make_sqlite_directory(uri: object) -> None:
    """A SQLite catalog file's directory, made when missing (SQLite creates the file, not its
    directory): a job's default catalog is `<sink.path>/catalog.db`, and the lake directory does
    not exist before the first run."""
    if not isinstance(uri, str) or not uri.startswith("sqlite:///"):
        return
    path = uri.removeprefix("sqlite:///").split("?", 1)[0]  # SQLAlchemy's: relative, or /absolute
    if path and path != ":memory:" and os.path.dirname(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)


def shown_uri(uri: str) -> str:
    """`uri` safe to show: its password, and query parameters whose name is a secret's, hidden (all
    of it when it is no URL: nothing then tells a secret from the rest)."""
    if "://" not in uri:
        return HIDDEN
    try:
        parts = urlsplit(uri)
        password = parts.password
    except ValueError:
        return HIDDEN  # not parseable: nothing to tell a secret from the rest
    shown = uri.replace(f":{password}@", f":{HIDDEN}@", 1) if password else uri
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    if any(is_sensitive(k) for k, _ in pairs):
        query = urlencode([(k, HIDDEN if is_sensitive(k) else v) for k, v in pairs], safe="[]/:")
        shown = shown.replace(f"?{parts.query}", f"?{query}", 1)
    return shown


def _flat(props: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested properties as dotted keys (`auth.oauth2.client_secret`), for the secret rule."""
    out: dict[str, Any] = {}
    for key, value in props.items():
        if isinstance(value, Mapping):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _check_uri(spec: CatalogSpec, uri: str) -> None:
    """The `uri` a type needs, of the right kind; a SQL catalog's SQLAlchemy driver installed."""
    kind = spec.type
    if kind == "sql":
        if not uri:
            raise SinkConfigError(
                f"catalog.type=sql needs uri: the catalog database's SQLAlchemy URL, e.g. {_SQL_EXAMPLE}"
            )
        _check_sql_driver(uri)
    elif kind == "rest" and not uri.lower().startswith(("http://", "https://")):
        got = f"{shown_uri(uri)} is not" if uri else "is missing, it must be"
        raise SinkConfigError(f"catalog.type=rest: uri {got} the REST catalog's http(s) URL, e.g. {_REST_EXAMPLE}")
    elif kind == "hive" and not uri:
        raise SinkConfigError("catalog.type=hive needs uri: the metastore's thrift://host:9083")


def _check_sql_driver(uri: str) -> None:
    """SQLAlchemy reads the URL and finds its driver module (`sqlite:` needs none beyond Python)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError

    try:
        url = make_url(uri)
    except ArgumentError:
        raise SinkConfigError(f"catalog.uri is not a SQLAlchemy URL: use e.g. {_SQL_EXAMPLE}") from None
    try:
        url.get_dialect().import_dbapi()
    except NoSuchModuleError:
        raise SinkConfigError(
            f"catalog.uri {shown_uri(uri)}: SQLAlchemy has no such database dialect; use e.g. {_SQL_EXAMPLE}"
        ) from None
    except ImportError as e:
        hint = " (pip install 'pyiceberg[sql-postgres]' brings psycopg2)" if e.name == "psycopg2" else ""
        raise SinkConfigError(
            f"catalog.uri: the SQLAlchemy driver of {url.drivername} needs the Python module {e.name}, which is not "
            f"installed: pip install it{hint}, or name an installed driver in the URL (e.g. postgresql+psycopg://)"
        ) from None


def _check_installed(kind: str, props: Mapping[str, Any]) -> None:
    """The module the catalog type needs beyond pyiceberg, named with the pip extra that brings it."""
    module, extra = _NEEDS.get(kind, (None, None))
    if kind == "rest" and str(props.get(_SIGV4, "")).lower() == "true":
        module, extra = "boto3", "rest-sigv4"
    if module is None or _installed(module):
        return
    what = f"catalog.type={kind}" + (f" with {_SIGV4}" if extra == "rest-sigv4" else "")
    raise SinkConfigError(f"{what} needs {module}, which is not installed: pip install 'pyiceberg[{extra}]'")


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package is missing (google.cloud.bigquery without google)
        return False
