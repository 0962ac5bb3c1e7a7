"""The suite's three tiers, declared once, and the check that keeps them honest.

- ``unit``: no server, no subprocess, no listening socket. What a developer runs after every
  edit (``make test-fast``).
- ``integration``: real servers (MariaDB, PostgreSQL, a Kafka-protocol broker) or an
  in-process server (the REST API), driven from the test's own process.
- ``e2e``: subprocesses (``cdc run``, ``cdc`` commands, pip), Spark, kill and chaos tests
  (``make test-e2e``).

A test's tier is the highest of: its directory (``DIRECTORY_TIERS``), the fixtures it uses
(``FIXTURE_TIERS``), and a ``pytest.mark.integration`` / ``pytest.mark.e2e`` on it or its
module (``slow`` counts as e2e). Nothing is marked by hand test by test: a test with none of
these is ``unit``. The tier is added as a marker, so ``-m unit`` selects it.

The check: while a ``unit`` test sets up, runs or tears down, starting a process
(``subprocess``, ``os.fork``, ``os.posix_spawn``, ``os.system``) or listening on a socket
raises ``TierViolation`` and fails the test, even if the code under test swallowed the
error. So a test that starts a server cannot hide in the fast tier: mark its module, or give
it the fixture that brings the server.

Scheduling (``--dist loadgroup``): a non-unit test is grouped with the rest of its module,
so a module-scoped server or job is built once; unit tests are not grouped and spread over
both workers one by one. Groups are ordered e2e first, then integration, then unit, so the
long tests start while the short ones fill the gaps (run with ``--no-loadscope-reorder``).
"""

from __future__ import annotations

import _posixsubprocess
import contextlib
import os
import socket
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

UNIT, INTEGRATION, E2E = "unit", "integration", "e2e"
TIERS = (UNIT, INTEGRATION, E2E)
_RANK = {tier: rank for rank, tier in enumerate(TIERS)}

TIER_DESCRIPTIONS = {
    UNIT: "no server, no subprocess, no listening socket (make test-fast)",
    INTEGRATION: "real servers, or an in-process server, driven in-process",
    E2E: "subprocesses (cdc run, cdc commands, pip), Spark, kill and chaos (make test-e2e)",
}

# Directories whose every test is at least this tier (paths relative to the rootdir).
DIRECTORY_TIERS: dict[str, str] = {
    "tests/e2e": E2E,
    "tests/chaos": E2E,
    "tests/demo": E2E,
    "tests/distributed": E2E,
}

# Fixtures that bring a server or process into a test, with the tier they imply. A fixture
# that uses one of these is found through the test's fixture closure, so only the fixtures
# that start something are listed.
FIXTURE_TIERS: dict[str, str] = {
    # tests/conftest.py
    "mariadb": INTEGRATION,
    "postgres": INTEGRATION,
    "tansu": INTEGRATION,
    "kafka_mock": INTEGRATION,
    # tests/mysql/conftest.py
    "private_mariadb": INTEGRATION,
    "debezium_loaded": INTEGRATION,
    # in-process REST servers (tests/rest/conftest.py, tests/security/rest_rig.py, module fixtures)
    "rest": INTEGRATION,
    "shared_rest": INTEGRATION,
    "herder": INTEGRATION,
    "api": INTEGRATION,
    "api_factory": INTEGRATION,
    # private servers with TLS (tests/security)
    "tls_mariadb": INTEGRATION,
    "tls_postgres": INTEGRATION,
    # tests/config/test_config_properties.py: javac and java, Kafka's own Properties as the oracle
    "java": E2E,
    # tests/spark/conftest.py and the Spark cluster rig: a JVM per session
    "spark": E2E,
    "cluster": E2E,
    # tests/e2e/conftest.py: pip install --target
    "plugin_path": E2E,
}

# Session fixtures that are costly to build: every test using one runs on the same worker, so
# it is built once per run instead of once per worker.
GROUP_BY_FIXTURE: tuple[str, ...] = ("debezium_runs", "debezium_loaded")


class TierViolation(RuntimeError):
    """A ``unit`` test started a process or a server."""


def tier_of(item: pytest.Item, rootdir: str) -> str:
    """The item's tier by the rules in the module docstring."""
    tiers = [UNIT]
    relpath = os.path.relpath(str(item.path), rootdir)
    for directory, tier in DIRECTORY_TIERS.items():
        if relpath == directory or relpath.startswith(directory + os.sep):
            tiers.append(tier)
    fixtures = getattr(item, "fixturenames", ())
    tiers.extend(tier for name, tier in FIXTURE_TIERS.items() if name in fixtures)
    tiers.extend(tier for tier in (INTEGRATION, E2E) if item.get_closest_marker(tier))
    if item.get_closest_marker("slow"):
        tiers.append(E2E)
    explicit_unit = item.get_closest_marker(UNIT)
    tier = max(tiers, key=_RANK.__getitem__)
    if explicit_unit and tier != UNIT:
        raise pytest.UsageError(f"{item.nodeid} is marked unit but its {relpath} or fixtures make it {tier}")
    return tier


def group_of(item: pytest.Item, tier: str) -> str | None:
    """The xdist group that keeps a test with the tests sharing its costly fixtures, or None."""
    fixtures = getattr(item, "fixturenames", ())
    for name in GROUP_BY_FIXTURE:
        if name in fixtures:
            return name
    if tier == UNIT:
        return None
    # The module's path: the same in every worker (xdist compares the workers' collections).
    return item.nodeid.split("::", 1)[0]


def assign(items: list[pytest.Item], config: pytest.Config) -> None:
    """Mark each item with its tier, group non-unit items by module, and order the run."""
    rootdir = str(config.rootpath)
    loadgroup = getattr(config.option, "dist", None) == "loadgroup"
    module_rank: dict[str, int] = {}
    for item in items:
        tier = tier_of(item, rootdir)
        item.stash[TIER_KEY] = tier
        if not item.get_closest_marker(tier):
            item.add_marker(tier)
        if loadgroup and not item.get_closest_marker("xdist_group"):
            group = group_of(item, tier)
            if group:
                item.add_marker(pytest.mark.xdist_group(group))
        key = str(item.path)
        module_rank[key] = max(module_rank.get(key, 0), _RANK[tier])
    # Long tiers first, each module kept contiguous (module fixtures are set up once); sorted()
    # is stable, so the order inside a module and between modules of one tier is the collected one.
    items[:] = sorted(items, key=lambda it: -module_rank[str(it.path)])


TIER_KEY = pytest.StashKey[str]()
VIOLATIONS_KEY = pytest.StashKey[list[str]]()


@contextmanager
def forbid_processes_and_servers(record: Callable[[str], None]) -> Iterator[None]:
    """Make every way of starting a process, and listening on a socket, raise TierViolation."""

    def refuse(what: str) -> Callable[..., Any]:
        def refused(*args: Any, **kwargs: Any) -> Any:
            record(what)
            raise TierViolation(f"a unit test may not {what}")

        return refused

    patches: list[tuple[Any, str, Any]] = [
        (subprocess.Popen, "_execute_child", refuse("start a subprocess")),
        # what subprocess and multiprocessing's spawn and forkserver start methods call underneath
        (_posixsubprocess, "fork_exec", refuse("start a process")),
        (os, "fork", refuse("fork")),
        (os, "system", refuse("run os.system")),
        (os, "posix_spawn", refuse("posix_spawn a process")),
        (os, "posix_spawnp", refuse("posix_spawn a process")),
        (socket.socket, "listen", refuse("listen on a socket (start a server)")),
    ]
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in patches if hasattr(owner, name)]
    try:
        for owner, name, replacement in patches:
            if hasattr(owner, name):
                setattr(owner, name, replacement)
        yield
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)


@contextmanager
def guarded(item: pytest.Item) -> Iterator[None]:
    """Around one phase of a test: the check above, for unit tests only."""
    if item.stash.get(TIER_KEY, UNIT) != UNIT:
        yield
        return
    violations = item.stash.setdefault(VIOLATIONS_KEY, [])
    with forbid_processes_and_servers(violations.append):
        yield


def failed_check(item: pytest.Item, report: pytest.TestReport) -> None:
    """Fail the phase's report when a unit test broke the tier rule in it (even if it caught the error)."""
    violations = item.stash.get(VIOLATIONS_KEY, [])
    if not violations or report.failed:
        if violations:
            report.longrepr = f"{report.longrepr}\n\n{_message(item, violations)}"
            item.stash[VIOLATIONS_KEY] = []
        return
    report.outcome = "failed"
    report.longrepr = _message(item, violations)
    item.stash[VIOLATIONS_KEY] = []


def _message(item: pytest.Item, violations: list[str]) -> str:
    what = ", ".join(sorted(set(violations)))
    return (
        f"tier check: {item.nodeid} is in the unit tier but tried to {what}. "
        "Mark its module `pytestmark = pytest.mark.integration` (servers) or `pytest.mark.e2e` "
        "(subprocesses, Spark), or give it the fixture that provides the server (tests/tiers.py)."
    )


# --- The hooks, imported by tests/conftest.py (and by the check's own test, in a pytester run).


def pytest_configure(config: pytest.Config) -> None:
    for tier, text in TIER_DESCRIPTIONS.items():
        config.addinivalue_line("markers", f"{tier}: tier {tier}: {text}")
    config.pluginmanager.register(TierTimes(), "cdc-tier-times")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # tryfirst: before `-m` deselects by these markers and before xdist reads the groups.
    assign(items, config)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    with guarded(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    with guarded(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    # The last test of a module (or of the run) also tears down the module's (the session's)
    # fixtures, which the module's other tiers set up: only a test's own teardown is checked.
    same_module = nextitem is not None and nextitem.path == item.path
    with guarded(item) if same_module else contextlib.nullcontext():
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[pytest.TestReport]:
    report = yield
    failed_check(item, report)
    return report


class TierTimes:
    """Each tier's count and time, summed from the reports. Registered by pytest_configure; on
    the xdist controller the reports come from both workers, carrying the tier markers as
    keywords and their start and stop times."""

    def __init__(self) -> None:
        self.times: dict[str, list[float]] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        tier = next((t for t in TIERS if t in report.keywords), UNIT)
        times = self.times.setdefault(tier, [0, 0.0, float("inf"), 0.0])
        times[0] += report.when == "call"
        times[1] += report.duration
        if report.start:
            times[2] = min(times[2], report.start)
            times[3] = max(times[3], report.stop)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.times:
            return
        start = min(t[2] for t in self.times.values())
        terminalreporter.write_sep("=", "time by tier (tests/tiers.py)")
        for tier in TIERS:
            if tier in self.times:
                count, seconds, first, last = self.times[tier]
                terminalreporter.write_line(
                    f"{tier:<12} {int(count):>5} tests  {_clock(seconds)} of test time (both workers)  "
                    f"ran from {_clock(first - start)} to {_clock(last - start)} of the run"
                )


def _clock(seconds: float) -> str:
    return f"{int(seconds // 60)}:{int(seconds % 60):02d}"
