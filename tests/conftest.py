from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from tests.rig import KafkaBroker, MariaDbServer, PostgresServer
from tests.rig import kafka as kafka_rig
from tests.rig import mariadb as mariadb_rig
from tests.rig import postgres as postgres_rig
from tests.support import examples as examples_support
from tests.support import spark_cds, spark_gateway
from tests.tiers import pytest_configure as _tiers_configure

# --- Property tests (tests/support/examples.py): `ci` runs the written counts, `dev` (the default)
# --- a tenth; both print the blob that replays a failure (@reproduce_failure).
settings.register_profile("ci", print_blob=True)
settings.register_profile("dev", print_blob=True, max_examples=examples_support.DEV_DEFAULT_EXAMPLES)
settings.load_profile(examples_support.profile())

# --- Spark's JVMs (the session's, and every `cdc run` a test starts, which inherit the
# --- environment) compile with C1 only and collect with the serial GC: a test's JVM lives
# --- seconds on small data, where C2's compiler threads cost more CPU than they save (a
# --- `cdc run` test took 27% less wall time). Same semantics; a flag set outside is kept.
os.environ.setdefault("SPARK_SUBMIT_OPTS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")


# --- ... and map one class-data-sharing archive of Spark's classes instead of loading them from
# --- the jars again (tests/support/spark_cds.py): made once, beside the first tests, when the
# --- run can start Spark (not `-m unit`); the xdist workers inherit the setting. Set
# --- CDC_TESTS_SPARK_CDS=off to run without it.
def pytest_configure(config: pytest.Config) -> None:
    _tiers_configure(config)
    if config.getoption("markexpr", "") == "unit" or config.getoption("collectonly", False):
        return
    # --- One warm Spark JVM per pytest process for the `cdc run`s a test waits for
    # --- (tests/support/spark_gateway.py), started on first use; CDC_TESTS_SPARK_GATEWAY=off
    # --- gives every run a JVM of its own.
    worker = getattr(config, "workerinput", {}).get("workerid", "main")
    cache_dir = getattr(config, "cache", None)  # None under -p no:cacheprovider
    logs = cache_dir.mkdir("spark-gateway") if cache_dir is not None else Path(tempfile.gettempdir())
    spark_gateway.install(logs / f"{worker}.log")
    if os.environ.get("CDC_TESTS_SPARK_CDS", "").lower() == "off":
        return
    cache = cache_dir.mkdir("spark-cds") if cache_dir is not None else Path(tempfile.gettempdir()) / "cdc-cds"
    config.stash[_SPARK_CDS] = spark_cds.ArchiveBuild(cache)


def pytest_unconfigure(config: pytest.Config) -> None:
    spark_gateway.uninstall()
    if _SPARK_CDS in config.stash:
        config.stash[_SPARK_CDS].stop()


_SPARK_CDS = pytest.StashKey[spark_cds.ArchiveBuild]()


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    build = config.stash.get(_SPARK_CDS, None)
    if build is not None and build.report and not hasattr(config, "workerinput"):
        terminalreporter.write_line(build.report)


# --- Real servers (tests/rig): one private instance per session, skipped when
# --- unavailable, an error instead under CI=true.


@pytest.fixture(scope="session")
def mariadb() -> Iterator[MariaDbServer]:
    """MariaDB with row binlog, full row metadata and strict GTIDs."""
    with mariadb_rig.provide() as server:
        yield server


@pytest.fixture
def mariadb_db(mariadb: MariaDbServer) -> Iterator[MariaDbServer]:
    """The session MariaDB, bound to a database created for this test and dropped after it."""
    with mariadb.fresh_database() as server:
        yield server


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """PostgreSQL with wal_level=logical, bound to the database `cdc`."""
    with postgres_rig.provide() as server:
        yield server


@pytest.fixture
def postgres_db(postgres: PostgresServer) -> Iterator[PostgresServer]:
    """The session PostgreSQL, bound to a database created for this test and dropped after it."""
    with postgres.fresh_database() as server:
        yield server


@pytest.fixture(scope="session")
def tansu() -> Iterator[KafkaBroker]:
    """A Tansu broker process: real sockets, killable, but no usable transactions."""
    with kafka_rig.provide_tansu() as broker:
        yield broker


@pytest.fixture(scope="session")
def kafka_mock() -> Iterator[KafkaBroker]:
    """librdkafka's in-process mock cluster: transactions and groups, no CreateTopics."""
    with kafka_rig.provide_mock() as broker:
        yield broker


# --- Under CI=true a skipped test is a failure: nothing may pass by not running.


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    import os

    if os.environ.get("CI", "").lower() != "true":
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter else []
    if skipped:
        if reporter:
            reporter.write_line(f"CI=true: {len(skipped)} test(s) skipped; skips count as failures in CI", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


# --- Tiers (tests/tiers.py): unit / integration / e2e, the check that a unit test starts no
# --- process and no server, and each tier's time at the end of the run.
from tests.tiers import (  # noqa: E402, F401 (hooks)
    pytest_collection_modifyitems,
    pytest_runtest_call,
    pytest_runtest_makereport,
    pytest_runtest_setup,
    pytest_runtest_teardown,
)
