"""Issue 33, item 11: small leaks of the worker's paths to REST callers.

Before the fix: task status traces showed the absolute paths of an editable install (a source
checkout is reached through an import hook, not `sys.path`), `GET /` gave the embedded log's
path as `kafka_cluster_id` (`embedded:/srv/cdc/state/cdc.db`), and a 401 named the JAAS file's
path (that one is checked in test_rest_auth_jaas.assert_basic_auth).
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

import cdc
from cdc.api.errors import ConfigException
from cdc.api.sensitive import HIDDEN, keep_hidden
from cdc.log.embedded import EmbeddedLog
from cdc.runtime.traces import DEBUG_LOGGER, status_trace
from cdc.runtime.transport import cluster_id

CHECKOUT = Path(cdc.__file__).resolve().parents[1]  # this repository: an editable install here


def test_a_status_trace_from_an_editable_install_shows_no_checkout_path(monkeypatch: pytest.MonkeyPatch) -> None:
    # A worker started by `cdc standalone` has no checkout on sys.path (pytest puts the rootdir there).
    monkeypatch.setattr(sys, "path", [p for p in sys.path if Path(p or ".").resolve() != CHECKOUT])
    try:
        keep_hidden({"database.password": "p", "database.port": "1"}, {"database.password": HIDDEN})
    except ConfigException as e:
        trace = status_trace(e)
    assert 'File "cdc/api/sensitive.py"' in trace, trace
    assert str(CHECKOUT) not in trace, trace


def test_debug_keeps_the_paths_for_the_operator() -> None:
    logger = logging.getLogger(DEBUG_LOGGER)
    level = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        try:
            keep_hidden({"database.password": "p", "database.port": "1"}, {"database.password": HIDDEN})
        except ConfigException as e:
            assert str(CHECKOUT) in status_trace(e)
    finally:
        logger.setLevel(level)


def test_the_embedded_cluster_id_names_no_path(tmp_path: Path) -> None:
    first, second = EmbeddedLog(tmp_path / "a"), EmbeddedLog(tmp_path / "b")
    try:
        ids = cluster_id(first), cluster_id(first), cluster_id(second)
    finally:
        first.close()
        second.close()
    assert all(str(tmp_path) not in i and "/" not in i and "cdc.db" not in i for i in ids), ids
    assert ids[0] == ids[1] != ids[2], "stable for one log, different for another"
    assert ids[0].startswith("embedded-")
