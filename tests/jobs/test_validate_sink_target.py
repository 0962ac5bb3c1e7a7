"""`cdc validate`'s sink checks (issue 24): the target reachable and writable by this user, each
finding one line at its YAML path with the fix; nothing is left behind in the lake."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc.jobs.validation.problems import Collector
from cdc.jobs.validation.sink import check_sink_writable, lake_problem
from cdc.jobs.validation.yaml_text import parse_job_yaml
from tests.jobs.jobfile import mysql_delta_job
from tests.mysql.harness import connector_props as mysql_props
from tests.rig import MariaDbServer, PostgresServer
from tests.support.examples import examples
from tests.support.proc import run_cdc

_SEGMENT = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True)


def _lines(text: str) -> list[str]:
    data, lines, stop = parse_job_yaml(text)
    assert data is not None, stop
    out = Collector(lines)
    check_sink_writable(data, out)
    return [p.render("job.yaml") for p in out.problems]


def _tree(root: Path) -> set[Path]:
    return set(root.rglob("*"))


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(_SEGMENT, min_size=1, max_size=3),
    st.lists(_SEGMENT, max_size=3),
    st.sampled_from(["delta", "parquet", "iceberg"]),
)
def test_a_lake_path_under_a_file_or_a_file_is_one_line_and_a_good_one_leaves_nothing(
    tmp_path_factory, parents, below, kind
) -> None:
    root = tmp_path_factory.mktemp("lake")
    good = root.joinpath(*parents, *below)
    (root / parents[0]).mkdir(exist_ok=True)
    before = _tree(root)
    text = f"name: j\nsource: {{connector.class: mysql}}\nsink:\n  type: {kind}\n  path: {good}\n"
    assert _lines(text) == []
    assert _tree(root) == before  # the probe file is gone, and validate created no directory

    # Tests may run as root, where a directory's mode does not stop writes: a file in the way does.
    blocker = root.joinpath(*parents)
    if blocker.is_dir() and not any(blocker.iterdir()):
        blocker.rmdir()
    blocker.parent.mkdir(parents=True, exist_ok=True)
    if not blocker.exists():
        blocker.write_text("not a directory")
    if blocker.is_file():
        under = blocker.joinpath(*below, "lake")
        text = f"name: j\nsource: {{connector.class: mysql}}\nsink:\n  type: {kind}\n  path: {under}\n"
        assert _lines(text) == [
            f"job.yaml:5: sink.path: cannot create {under}: {blocker} is a file, not a directory; "
            "choose a path under a directory"
        ]
        text = text.replace(str(under), str(blocker))
        assert _lines(text) == [
            f"job.yaml:5: sink.path: {blocker} is a file, not a directory; point path at a directory "
            "(one sub-directory per table)"
        ]


def test_an_unwritable_lake_directory_is_named_with_the_fix(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    lake.mkdir(mode=0o500)
    try:
        if os.geteuid() == 0:  # root writes anyway: the directory's mode cannot be what stops it
            assert lake_problem(str(lake)) is None and list(lake.iterdir()) == []
        else:
            problem = lake_problem(str(lake / "new"))
            assert problem is not None and problem.startswith(f"cannot create {lake / 'new'} under {lake} (Permission")
            assert f"chmod u+w {lake}" in problem
    finally:
        lake.chmod(0o700)
    assert lake_problem(f"s3://bucket/{tmp_path.name}") is None  # an object store: the executors' credentials


def _pg_job(dsn: str) -> str:
    return (
        "name: j\n"
        "source: {connector.class: mysql, topic.prefix: shop}\n"
        "sink:\n"
        "  type: postgres\n"
        f"  dsn: '{dsn}'\n"
        "  schema: wh\n"
        "  tables:\n"
        "    shop.orders: {target: orders}\n"
        "    shop.customers: {}\n"
    )


def test_a_warehouse_user_without_the_grants_is_told_which_to_ask_for(postgres_db: PostgresServer) -> None:
    role = f"w{os.getpid()}"
    with postgres_db.connect() as conn:
        conn.execute(f'CREATE ROLE "{role}" LOGIN')
        conn.execute("CREATE SCHEMA wh")
        conn.execute("CREATE TABLE wh.orders (id int PRIMARY KEY)")
        conn.execute(f'GRANT USAGE ON SCHEMA wh TO "{role}"')
        conn.execute(f'GRANT SELECT, INSERT ON wh.orders TO "{role}"')
    user_dsn = replace(postgres_db, user=role, password="").dsn
    try:
        assert _lines(_pg_job(user_dsn)) == [
            f'job.yaml:6: sink.schema: user "{role}" may not CREATE in schema "wh" and tables shop_shop_customers '
            f'do not exist yet; GRANT CREATE ON SCHEMA "wh" TO "{role}"',
            f'job.yaml:8: sink.tables[\'shop.orders\']: user "{role}" lacks UPDATE, DELETE on table "wh"."orders"; '
            f'GRANT INSERT, UPDATE, DELETE ON "wh"."orders" TO "{role}"',
        ]
        missing = _pg_job(user_dsn).replace("schema: wh", "schema: nowhere")
        assert _lines(missing) == [
            f'job.yaml:6: sink.schema: schema "nowhere" does not exist and user "{role}" may not create it; '
            f'create it (CREATE SCHEMA "nowhere" AUTHORIZATION "{role}") or GRANT CREATE ON DATABASE to "{role}"'
        ]
        with postgres_db.connect() as conn:
            conn.execute(f'GRANT CREATE ON SCHEMA wh TO "{role}"')
            conn.execute(f'GRANT UPDATE, DELETE ON wh.orders TO "{role}"')
        assert _lines(_pg_job(user_dsn)) == []
        assert _lines(_pg_job(postgres_db.dsn)) == []  # the superuser may do anything
    finally:
        with postgres_db.connect() as conn:
            conn.execute(f'DROP OWNED BY "{role}"; DROP ROLE "{role}"')


def test_cdc_validate_reports_an_unwritable_lake_in_one_line(tmp_path: Path, mariadb_db: MariaDbServer) -> None:
    """Through the command, with a reachable source: the lake check runs with the connector's."""
    with mariadb_db.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE orders (id INT PRIMARY KEY)")
    job = mysql_delta_job(tmp_path, "shop", mysql_props(mariadb_db), {f"{mariadb_db.database}.orders": "keys: [id]"})
    res = run_cdc("validate", str(job))
    assert res.returncode == 0 and res.stdout.strip() == f"{job}: OK", res.stdout + res.stderr
    assert not (tmp_path / "lake").exists()  # validate created nothing
    (tmp_path / "lake").write_text("a file where the lake should be")
    res = run_cdc("validate", str(job))
    assert res.returncode == 2, res.stdout + res.stderr
    line = job.read_text().splitlines().index(f"  path: {tmp_path / 'lake'}") + 1
    assert res.stderr.splitlines() == [
        f"error: {job}:{line}: sink.path: {tmp_path / 'lake'} is a file, not a directory; point path at a directory "
        "(one sub-directory per table)"
    ]
