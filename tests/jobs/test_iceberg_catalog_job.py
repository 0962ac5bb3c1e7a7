"""A job's `sink.catalog` (issue 36 item 7): a SQL catalog's database URL as before, or pyiceberg's
catalog properties (`type: rest`, …); `cdc validate` names a bad one at its YAML path without its
secrets, and `cdc verify`'s reader opens the catalog as the sink does, a REST one included."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from cdc.jobs.load import validate_job_text
from cdc.jobs.sink_config import iceberg_catalog, sink_config
from cdc.jobs.spec import JobSpec
from cdc.jobs.validation.problems import Collector
from cdc.jobs.validation.sink import check_sink_writable
from cdc.jobs.verify.target import IcebergReader, open_target
from tests.support.iceberg_rest import serving

_SOURCE = "source: {connector.class: mysql, database.hostname: h, database.user: u, database.server.id: 1, "
_SOURCE += "topic.prefix: p}\n"


def _spec(sink: dict[str, Any]) -> JobSpec:
    return JobSpec("job", {"connector.class": "mysql", "topic.prefix": "bank"}, [], {}, {"type": "iceberg", **sink})


def test_a_string_or_no_catalog_is_the_sql_catalog_under_path(tmp_path: Path) -> None:
    root = os.path.abspath(tmp_path)
    assert iceberg_catalog({"path": root}) == {"uri": f"sqlite:///{root}/catalog.db", "warehouse": f"file://{root}"}
    given = {"path": root, "catalog": "postgresql+psycopg://cdc@db/lake"}
    assert iceberg_catalog(given) == {"uri": "postgresql+psycopg://cdc@db/lake", "warehouse": f"file://{root}"}
    assert iceberg_catalog({"path": root, "catalog": {"type": "sql", "name": "lake"}}) == {
        "type": "sql",
        "name": "lake",
        "uri": f"sqlite:///{root}/catalog.db",
        "warehouse": f"file://{root}",
    }


def test_a_rest_catalog_mapping_is_passed_on_as_written(tmp_path: Path) -> None:
    rest = {"type": "rest", "uri": "https://polaris.example.com/api/catalog", "warehouse": "prod", "credential": "a:b"}
    conf = sink_config(_spec({"path": str(tmp_path), "catalog": rest, "schema": "lake"}))
    assert conf["catalog"] == rest and conf["namespace"] == "lake"
    unwritable = tmp_path / "a-file"
    unwritable.write_text("")
    out = Collector({})
    check_sink_writable({"sink": {"type": "iceberg", "path": str(unwritable), "catalog": rest}}, out)
    assert out.problems == []  # the REST catalog says where its tables go: path is not checked
    check_sink_writable({"sink": {"type": "iceberg", "path": str(unwritable)}}, out)
    assert [p.path for p in out.problems] == [("sink", "path")]  # the default SQL catalog keeps them there


@pytest.mark.parametrize(
    ("catalog", "says"),
    [
        ("{type: nessie, uri: 'https://h', credential: 'id:client-secret-value'}", "is not a pyiceberg catalog type"),
        ("{type: rest, token: bearer-token-value}", "uri is missing, it must be the REST catalog's http(s) URL"),
        ("{type: sql, uri: 'ftp://u:db-password-value@h/x'}", "SQLAlchemy has no such database dialect"),
    ],
)
def test_validate_names_a_bad_catalog_at_its_path_without_secrets(catalog: str, says: str) -> None:
    text = f"name: j\n{_SOURCE}sink: {{type: iceberg, path: /l, catalog: {catalog}}}\n"
    job, problems = validate_job_text(text, "job.yaml", check_connectivity=False)
    assert job is None
    line = problems[0].render("job.yaml")
    assert line.startswith("job.yaml:3: sink.catalog: ") and says in line, line
    assert not [s for s in ("client-secret-value", "bearer-token-value", "db-password-value") if s in line], line


@pytest.mark.integration  # the REST catalog stand-in listens on a socket
def test_verify_reads_a_rest_catalog_as_the_sink_wrote_it(tmp_path: Path) -> None:
    """The reader opens `type: rest` with the job's token and leaves out soft-deleted rows."""
    from pyiceberg.catalog.rest import RestCatalog

    with serving(tmp_path / "rest", token="verify-token-value") as server:
        writer = RestCatalog("writer", uri=server.uri, token="verify-token-value")
        writer.create_namespace("lake")
        rows = pa.table(
            {
                "id": pa.array([1, 2, 3], pa.int32()),
                "v": ["a", "b", "c"],
                "__seq": pa.array([bytes(32)] * 3, pa.binary()),
                "__deleted": [False, False, True],
            }
        )
        writer.create_table(("lake", "bank_public_t"), schema=rows.schema).append(rows)
        catalog = {"type": "rest", "uri": server.uri, "token": "verify-token-value"}
        reader = open_target(_spec({"catalog": catalog, "schema": "lake"}))
        assert isinstance(reader, IcebergReader) and reader.describe("bank_public_t") == "lake.bank_public_t"
        assert reader.columns("bank_public_t") == ["id", "v", "__seq", "__deleted"]
        assert sorted(reader.rows("bank_public_t", ["id", "v"])) == [(1, "a"), (2, "b")]
        assert reader.columns("never_written") is None
        reader.close()
