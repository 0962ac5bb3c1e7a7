"""The Iceberg target's `catalog` (issue 36 item 7): any pyiceberg catalog through its own
`load_catalog`, checked before the query starts, with messages that name the key and the fix
and never a secret's value. No server here: what a running REST catalog does is in
tests/spark/test_iceberg.py and tests/jobs/test_iceberg_catalog_job.py."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from cdc_spark.apply import SinkConfig, SinkConfigError
from cdc_spark.apply.errors import CatalogOpenError
from cdc_spark.apply.iceberg_catalog import known_types, open_catalog, parse_catalog

# Values of keys cdc.api.sensitive calls secret; none may show in a message.
SECRETS = {
    "credential": "client-id:client-secret-value",
    "token": "bearer-token-value",
    "s3.secret-access-key": "s3-secret-value",
    "adls.sas-token": "sas-token-value",
    "auth": {"type": "oauth2", "oauth2": {"client_secret": "nested-secret-value"}},
}
_SECRET_TEXT = (
    "client-secret-value",
    "bearer-token-value",
    "s3-secret-value",
    "sas-token-value",
    "nested-secret-value",
)


def _iceberg(catalog: Any) -> dict[str, Any]:
    return {"target": "iceberg", "namespace": "lake", "catalog": catalog}


@pytest.mark.parametrize(
    ("catalog", "says"),
    [
        ({"type": "nessie", "uri": "http://h"}, r"catalog.type='nessie' is not a pyiceberg catalog type: use one of "),
        ({"type": "sql"}, r"catalog.type=sql needs uri: the catalog database's SQLAlchemy URL, e.g. sqlite:"),
        ({"type": "rest"}, r"catalog.type=rest: uri is missing, it must be the REST catalog's http\(s\) URL"),
        ({"type": "rest", "uri": "thrift://h:9083"}, r"uri thrift://h:9083 is not the REST catalog's http\(s\) URL"),
        ({"type": "hive"}, r"catalog.type=hive needs uri: the metastore's thrift://"),
        ({"warehouse": "s3://bucket/lake"}, r"catalog needs uri .* or type \(one of rest, "),
        ({"uri": "ftp://h/x"}, r"catalog.uri ftp://h/x: the catalog type cannot be told from its scheme; set catalog"),
        ({"type": "rest", "py-catalog-impl": "my.Catalog", "uri": "http://h"}, r"type and py-catalog-impl exclude"),
        ({"name": " ", "uri": "sqlite:///c.db"}, r"catalog.name must be a non-empty name \(default cdc\)"),
        ({"uri": "sqlite+nodriver:///c.db"}, r"catalog.uri .*SQLAlchemy"),
        ("sqlite:///c.db", r"catalog must be a mapping of pyiceberg's catalog properties"),
    ],
)
def test_a_bad_catalog_is_one_line_naming_the_key_and_the_fix(catalog: Any, says: str) -> None:
    with pytest.raises(SinkConfigError, match=says) as raised:
        SinkConfig.parse(_iceberg(catalog))
    assert "\n" not in str(raised.value)


def test_an_unknown_type_lists_pyiceberg_s_own_types() -> None:
    with pytest.raises(SinkConfigError) as raised:
        SinkConfig.parse(_iceberg({"type": "polaris", "uri": "https://h"}))
    from pyiceberg.catalog import CatalogType

    assert known_types() == tuple(t.value for t in CatalogType)
    assert all(t in str(raised.value) for t in ("rest", "sql", "glue", "hive", "dynamodb", "in-memory"))


@pytest.mark.parametrize(
    ("catalog", "module", "extra"),
    [
        ({"type": "glue"}, "boto3", "glue"),
        ({"type": "dynamodb"}, "boto3", "dynamodb"),
        ({"type": "hive", "uri": "thrift://h:9083"}, "thrift", "hive"),
        ({"type": "rest", "uri": "https://h", "rest.sigv4-enabled": True}, "boto3", "rest-sigv4"),
    ],
)
def test_a_missing_module_names_the_pip_extra(
    catalog: dict[str, Any], module: str, extra: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # as if not installed, whatever this machine has
    with pytest.raises(
        SinkConfigError, match=rf"needs {module}, which is not installed: pip install 'pyiceberg\[{extra}\]'"
    ):
        SinkConfig.parse(_iceberg(catalog))


def test_a_missing_sql_driver_is_named_at_its_uri(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pymysql", None)
    with pytest.raises(SinkConfigError, match=r"catalog.uri: the SQLAlchemy driver of mysql\+pymysql needs .* pymysql"):
        SinkConfig.parse(_iceberg({"uri": "mysql+pymysql://cdc:db-password-value@h/lake"}))


def test_a_mapping_without_type_keeps_being_the_sql_catalog(tmp_path: Path) -> None:
    """Before `type`, the sink always opened a SqlCatalog named cdc: such a mapping still does."""
    for uri in (f"sqlite:///{tmp_path}/c.db", "mysql+pymysql://u@h/db"):
        spec = parse_catalog({"uri": uri, "warehouse": f"file://{tmp_path}"})
        assert (spec.name, spec.type, spec.properties["type"]) == ("cdc", "sql", "sql")
    assert parse_catalog({"uri": "https://h/api"}).type == "rest"  # pyiceberg's inference, kept
    assert parse_catalog({"name": "lake", "type": "REST", "uri": "https://h"}).name == "lake"

    from pyiceberg.catalog.sql import SqlCatalog

    catalog = open_catalog({"uri": f"sqlite:///{tmp_path}/c.db", "warehouse": f"file://{tmp_path}"})
    assert isinstance(catalog, SqlCatalog) and catalog.name == "cdc"


def test_secrets_never_show_in_messages_or_the_config() -> None:
    bad = [
        {**SECRETS, "type": "unknown"},
        {**SECRETS, "type": "rest", "uri": "ftp://user:uri-password-value@h/"},
        {**SECRETS, "uri": "ftp://user:uri-password-value@h/?password=query-password-value"},
        {**SECRETS, "type": "sql", "uri": "not a url password=uri-password-value"},
    ]
    for catalog in bad:
        with pytest.raises(SinkConfigError) as raised:
            SinkConfig.parse(_iceberg(catalog))
        message = str(raised.value)
        assert not [s for s in (*_SECRET_TEXT, "uri-password-value", "query-password-value") if s in message], message
    config = SinkConfig.parse(_iceberg({**SECRETS, "type": "rest", "uri": "https://h/api"}))
    assert not [s for s in _SECRET_TEXT if s in repr(config)]


def test_a_catalog_that_does_not_answer_is_one_line_without_its_secrets() -> None:
    """Nothing listens on port 1: pyiceberg's ConnectionError, whose text and arguments may quote the
    properties, becomes one line naming the catalog and the fix; the secrets are hidden."""
    with pytest.raises(CatalogOpenError) as raised:
        open_catalog({**SECRETS, "type": "rest", "uri": "http://127.0.0.1:1/api"})
    message = str(raised.value)
    assert message.startswith("cannot open the Iceberg catalog cdc (type rest, uri http://127.0.0.1:1/api): ")
    assert "Fix: check catalog.uri" in message and "\n" not in message
    assert not [s for s in _SECRET_TEXT if s in message] and raised.value.__cause__ is None


def test_an_extra_missing_when_opening_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """pyiceberg's NotInstalledError (its text names the extra) for a module that vanished after the check."""
    spec = parse_catalog({"type": "in-memory"})
    monkeypatch.setitem(sys.modules, "pyiceberg.catalog.memory", None)
    with pytest.raises(
        SinkConfigError, match=r"catalog cdc \(type in-memory\): .*pip install 'pyiceberg\[sql-sqlite\]'"
    ):
        open_catalog(spec)


@pytest.mark.integration  # the REST catalog stand-in listens on a socket
def test_a_namespace_the_catalog_forbids_creating_is_used_when_it_exists(tmp_path: Path) -> None:
    """A locked-down REST catalog (403 on creating namespaces) where an administrator made the
    namespace: the sink opens it without asking to create it."""
    from cdc_spark.apply.iceberg import IcebergTarget
    from tests.support.iceberg_rest import serving

    with serving(tmp_path / "rest") as server:
        server.backing.create_namespace("lake")
        server.routes.namespaces_fixed = True
        config = SinkConfig.parse(_iceberg({"type": "rest", "uri": server.uri}))
        IcebergTarget(config)
        assert ("POST", "/v1/namespaces") not in server.routes.requests


def test_a_postgres_target_s_password_is_not_in_the_config_s_repr() -> None:
    config = SinkConfig.parse(
        {"target": "postgres", "dsn": "postgresql://u:dsn-secret-value@h:5432/db", "sslpassword": "ssl-secret-value"}
    )
    assert "dsn-secret-value" not in repr(config) and "ssl-secret-value" not in repr(config)


def test_a_sqlite_catalog_in_a_directory_not_made_yet_is_opened(tmp_path: Path) -> None:
    """A job's default catalog is <sink.path>/catalog.db, before the first run made the lake."""
    lake = tmp_path / "not" / "yet"
    catalog = open_catalog({"uri": f"sqlite:///{lake}/catalog.db", "warehouse": f"file://{lake}"})
    catalog.create_namespace("lake")
    assert (lake / "catalog.db").is_file()
