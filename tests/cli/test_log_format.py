"""Log lines carry their connector, task and table (issue 24), as Kafka Connect's `connector.context`
MDC does: `[name|task-0] ` in the text pattern, fields of each JSON line under log.format=json."""

from __future__ import annotations

import io
import json
import logging
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from cdc.jobs.load import validate_job_text
from cdc.runtime import logging_context
from tests.support.plugins import FILE_PLUGIN, pip_install_target
from tests.support.proc import cdc_argv

_MISSING = "Couldn't find file"  # the file source's WARNING, logged by its task on the task's thread


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("plugins")
    pip_install_target(FILE_PLUGIN, root / "cdc-connector-file")
    return root


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _standalone_until(tmp_path: Path, worker_extra: str, cli: list[str], plugin_path: Path) -> str:
    """`cdc standalone` with a FileStream source on a file that does not exist, until its task
    has said so; its stderr."""
    worker = tmp_path / "worker.properties"
    worker.write_text(
        f"transport=embedded\nstate.dir={tmp_path / 'state'}\nplugin.path={plugin_path}\n"
        f"listeners=http://127.0.0.1:{_free_port()}\n{worker_extra}"
    )
    source = tmp_path / "source.properties"
    source.write_text(f"name=files\nconnector.class=FileStreamSource\nfile={tmp_path / 'absent.txt'}\ntopic=lines\n")
    log = tmp_path / "stderr.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            cdc_argv(*cli, "standalone", str(worker), str(source)), stdout=subprocess.DEVNULL, stderr=err
        )
    try:
        deadline = time.monotonic() + 60
        while _MISSING not in log.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
    finally:
        proc.terminate()
        proc.wait(30)
    return log.read_text()


def test_json_lines_name_the_connector_and_task(tmp_path: Path, plugin_path: Path) -> None:
    out = _standalone_until(tmp_path, "log.format=json\n", [], plugin_path)
    lines = [json.loads(line) for line in out.splitlines()]  # every line is one JSON object
    (missing,) = [r for r in lines if r["message"].startswith(_MISSING)]
    assert missing["level"] == "WARNING" and missing["logger"] == "cdc_file.source"
    assert (missing["connector"], missing["task"], missing["connector.context"]) == ("files", 0, "[files|task-0]")
    assert missing["thread"] == "task-files-0" and missing["time"].endswith("Z")
    rest = [r for r in lines if r["logger"] == "cdc.rest.server"]
    assert rest and all("connector" not in r for r in rest)  # the worker's own lines have no connector


def test_text_lines_carry_kafka_connects_connector_context(tmp_path: Path, plugin_path: Path) -> None:
    out = _standalone_until(tmp_path, "", ["--log-format", "text"], plugin_path)
    (line,) = [line for line in out.splitlines() if _MISSING in line]
    assert f"] WARNING [files|task-0] {_MISSING} {tmp_path / 'absent.txt'} for FileStreamSourceTask" in line


def test_the_table_and_the_scopes_of_a_line(tmp_path: Path) -> None:
    """The context is per thread (contextvars), as log4j's MDC is: a line logged by another
    thread at the same time does not get it."""
    stream = io.StringIO()
    previous, level = logging.getLogger().handlers[:], logging.getLogger().level
    logging_context.configure(logging.INFO, "json", stream)
    log = logging.getLogger("test.ctx")
    started, release = threading.Event(), threading.Event()

    def task() -> None:
        with logging_context.for_task("shop", 2), logging_context.table_context("shop.orders"):
            started.set()
            log.info("in the table")
            release.wait(5)
        log.info("after")

    try:
        worker = threading.Thread(target=task)
        worker.start()
        started.wait(5)
        log.info("elsewhere")
        with logging_context.for_offsets("shop", 2):
            log.info("committing", extra={"table": "shop.items"})
        with logging_context.for_connector("shop"):
            log.info("starting")
        release.set()
        worker.join(5)
    finally:
        root = logging.getLogger()
        for h in root.handlers[:]:
            if h not in previous:
                root.removeHandler(h)
        root.setLevel(level)
    got = {r["message"]: r for r in map(json.loads, stream.getvalue().splitlines())}
    assert got["in the table"]["table"] == "shop.orders" and got["in the table"]["connector.context"] == "[shop|task-2]"
    assert "connector" not in got["elsewhere"] and "table" not in got["after"] and "connector" not in got["after"]
    assert got["committing"]["connector.context"] == "[shop|task-2|offsets]"
    assert got["committing"]["table"] == "shop.items"
    assert got["starting"]["connector.context"] == "[shop|worker]" and "task" not in got["starting"]


def test_a_job_file_sets_the_log_format() -> None:
    base = "name: j\nsource: {connector.class: mysql}\nsink: {type: delta, path: /l}\n"
    job, _ = validate_job_text(base + "log.format: json\n", check_connectivity=False, inspect_only=True)
    assert job is not None and job.log_format == "json"
    job, problems = validate_job_text(base + "log.format: xml\n", check_connectivity=False, inspect_only=True)
    assert job is None
    assert problems[0].render("job.yaml") == "job.yaml:4: ['log.format']: 'xml' is not one of text, json"
