"""Issue 17, deliverables 1 and 6 against the real `cdc standalone` process: its REST API, its log.

An attacker with the REST API asks for `/etc/passwd`, the worker's environment and a file
write outside state.dir; the worker refuses each with one line, and neither the responses
nor the worker's whole log (stdout and stderr, at DEBUG) carry what those files hold. The
operator's own connector file keeps `${env:...}`. On the main before the fix the REST
creates were accepted and the values came back in traces and the log.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import httpx
import pytest

from cdc.config.properties import parse_properties
from tests.support.proc import CdcProcess, wait_for, write_props

QUOTING = "tests.security.connectors.QuotingSource"
CANARY = "Canary-" + uuid.uuid4().hex


def _url(proc: CdcProcess) -> str | None:
    m = re.search(r"REST API listening on (http://127\.0\.0\.1:\d+)", proc.output())
    return m.group(1) if m else None


@pytest.mark.e2e
def test_rest_caller_cannot_read_or_write_the_workers_files(tmp_path: Path) -> None:
    passwd_root = parse_properties(Path("/etc/passwd").read_text(errors="replace"))["root"]
    state = tmp_path / "state"
    worker = write_props(
        tmp_path / "worker.properties",
        {"transport": "embedded", "state.dir": state, "listeners": "http://127.0.0.1:0"},
    )
    operator = write_props(
        tmp_path / "op.properties",
        {
            "name": "op",
            "connector.class": QUOTING,
            "topic": "op.out",
            "host": "${env:CDC_OPERATOR_HOST}",
            "task.fail": "true",  # its error quotes the resolved host
        },
    )
    env = {"CDC_OPERATOR_HOST": f"db-{CANARY}", "CDC_LOG_LEVEL": "DEBUG", "CDC_TEST_CANARY": CANARY}
    proc = CdcProcess("standalone", str(worker), str(operator), log_path=tmp_path / "worker.log", env=env)
    outside = Path("/tmp") / f"cdc-outside-{uuid.uuid4().hex}"
    try:
        wait_for(lambda: _url(proc) is not None, 60, "the REST API", proc)
        with httpx.Client(base_url=_url(proc), timeout=30) as http:
            wait_for(
                lambda: "FAILED" in http.get("/connectors/op/tasks/0/status").text, 30, "the operator's task failed"
            )
            assert "lost the connection to [hidden]" in http.get("/connectors/op/tasks/0/status").json()["trace"]
            # The operator's ${env:...} resolved; REST shows the reference only.
            assert http.get("/connectors/op/config").json()["host"] == "${env:CDC_OPERATOR_HOST}"
            assert http.get("/connectors/op/tasks").json()[0]["config"]["host"] == "${env:CDC_OPERATOR_HOST}"
            attacks = [
                {"host": "${file:/etc/passwd:root}"},
                {"tasks.max": "${file:/etc/passwd:root}"},
                {"host": "${file:/proc/self/environ:CDC_TEST_CANARY}"},
                {"host": "${env:CDC_OPERATOR_HOST}"},
                {"history.file": str(outside / "h.jsonl")},
            ]
            responses = []
            for i, extra in enumerate(attacks):
                body = {"name": f"x{i}", "config": {"connector.class": QUOTING, "topic": "x", **extra}}
                r = http.post("/connectors", json=body)
                assert r.status_code == 400, r.text
                assert "\n" not in r.json()["message"]
                assert r.json()["message"].startswith(f"{next(iter(extra))}: "), r.text
                responses.append(r.text)
            assert http.get("/connectors").json() == ["op"]
            responses += [http.get(p).text for p in ("/connectors?expand=status&expand=info", "/connectors/op/status")]
    finally:
        code = proc.terminate()
    log = (tmp_path / "worker.log").read_text(errors="replace")
    assert code == 0, log[-3000:]
    assert "Task op-0 failed: lost the connection to [hidden]" in log
    for text in [*responses, log]:
        assert CANARY not in text
        assert passwd_root not in text
    assert not outside.exists()
