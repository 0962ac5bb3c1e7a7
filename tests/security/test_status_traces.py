"""Issue 17, deliverable 7: status traces (REST `trace`, and the status store `cdc status` reads)
carry no absolute path of the worker's installation unless the `cdc` logger is at DEBUG.

On the main before the fix every frame read `File "/…/site-packages/…"` or `File "/<checkout>/cdc/…"`.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import pytest

import cdc
from cdc.runtime.traces import status_trace, strip_worker_paths
from tests.rest.conftest import wait_until
from tests.security.provider_rig import SecureRest, quoting, secure_rest

REPO = Path(__file__).resolve().parents[2]
INSTALL_ROOTS = sorted(
    {str(REPO), sys.prefix, sys.base_prefix, sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["purelib"]},
    key=len,
)


def _absolute_frames(trace: str) -> list[str]:
    return [m for m in re.findall(r'File "([^"]+)"', trace) if m.startswith("/")]


def _install_paths(text: str) -> list[str]:
    return [root for root in INSTALL_ROOTS if root + "/" in text]


@pytest.fixture
def cdc_level() -> Iterator[logging.Logger]:
    logger = logging.getLogger("cdc")
    old = logger.level
    logger.setLevel(logging.INFO)
    try:
        yield logger
    finally:
        logger.setLevel(old)


def _failed_traces(rest: SecureRest) -> tuple[str, str]:
    """A connector whose start fails (herder path) and one whose task fails (task path)."""
    assert rest.http.post("/connectors", json=quoting("c", **{"fail.start": "true"})).status_code == 201
    where = str(Path(cdc.__file__))  # a worker path quoted in an error message
    assert rest.http.post("/connectors", json=quoting("t", host=where, **{"task.fail": "true"})).status_code == 201
    wait_until(lambda: rest.state("c")["connector"]["state"] == "FAILED", what="connector FAILED")
    wait_until(lambda: (rest.state("t")["tasks"] or [{}])[0].get("state") == "FAILED", what="task FAILED")
    return rest.state("c")["connector"]["trace"], rest.http.get("/connectors/t/tasks/0/status").json()["trace"]


@pytest.mark.integration
def test_traces_carry_no_install_paths(tmp_path: Path, cdc_level: logging.Logger) -> None:
    with secure_rest(tmp_path) as rest:
        connector_trace, task_trace = _failed_traces(rest)
        stored = rest.worker.status_store.get_task("t", 0)  # what `cdc status` prints the last line of
        listing = rest.http.get("/connectors?expand=status").text
    for trace in (
        connector_trace,
        task_trace,
        stored.trace or "",
        json.loads(listing)["t"]["status"]["tasks"][0]["trace"],
    ):
        assert trace.startswith("Traceback (most recent call last):")
        assert _absolute_frames(trace) == [], trace
        assert _install_paths(trace) == [], trace
    assert 'File "cdc/runtime/task.py"' in task_trace or 'File "cdc/runtime/source_task.py"' in task_trace
    assert 'File "tests/security/connectors.py"' in task_trace
    assert task_trace.rstrip().endswith("RuntimeError: lost the connection to cdc/__init__.py")
    assert 'File "cdc/runtime/standalone.py"' in connector_trace


@pytest.mark.integration
def test_debug_keeps_absolute_paths(tmp_path: Path, cdc_level: logging.Logger) -> None:
    cdc_level.setLevel(logging.DEBUG)
    with secure_rest(tmp_path) as rest:
        connector_trace, task_trace = _failed_traces(rest)
    assert f'File "{REPO}/tests/security/connectors.py"' in task_trace
    assert task_trace.rstrip().endswith(f"lost the connection to {Path(cdc.__file__)}")
    assert f'File "{REPO}/cdc/runtime/standalone.py"' in connector_trace


def test_site_packages_and_stdlib_frames_are_cut(cdc_level: logging.Logger) -> None:
    import yaml

    try:
        yaml.safe_load("a: [")  # raises inside site-packages
    except yaml.YAMLError as e:
        site_error: BaseException = e
    try:
        json.loads("{")  # raises inside the standard library
    except ValueError as e:
        stdlib_error: BaseException = e
    for error, frame in ((site_error, 'File "yaml/'), (stdlib_error, 'File "json/')):
        trace = status_trace(error)
        assert frame in trace, trace
        assert _absolute_frames(trace) == [] and _install_paths(trace) == [], trace


def test_text_outside_install_dirs_is_unchanged(tmp_path: Path) -> None:
    text = f'File "{tmp_path}/plugin.py", line 3\nno path here: 127.0.0.1:5432 /\n'
    assert strip_worker_paths(text) == text
