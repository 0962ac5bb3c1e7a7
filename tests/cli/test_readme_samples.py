"""The README's sample `worker.properties` works as pasted (issue 24): its `plugin.path`
(/opt/cdc/plugins) does not exist here, which Kafka Connect logs and skips, and so does cdc."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from cdc.jobs.load import validate_job_text
from cdc.jobs.sink_config import TableNamer, sink_config
from cdc.runtime.plugins import PluginRegistry
from tests.support.proc import cdc_argv

REPO = Path(__file__).resolve().parents[2]


def _readme_block(caption: str) -> str:
    """The first fenced block after the README line `caption`."""
    lines = (REPO / "README.md").read_text().splitlines()
    start = lines.index(caption)
    fence = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("```"))
    end = next(i for i in range(fence + 1, len(lines)) if lines[i].startswith("```"))
    return "\n".join(lines[fence + 1 : end]) + "\n"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_missing_plugin_path_entry_is_skipped_with_a_warning(tmp_path: Path, caplog) -> None:
    (tmp_path / "present").mkdir()
    registry = PluginRegistry.discover([str(tmp_path / "absent"), str(tmp_path / "present")])
    assert registry.plugin_path == [str(tmp_path / "present")]
    assert any("MySqlConnector" in p.class_name for p in registry.plugins)  # the installed ones still load
    (warning,) = [r for r in caplog.records if r.levelname == "WARNING"]
    assert warning.getMessage() == (
        f"plugin.path entry '{tmp_path / 'absent'}' is not a directory, skipped; create it or fix plugin.path"
    )


@pytest.mark.e2e
def test_the_readme_worker_properties_start_a_standalone_worker_as_pasted(tmp_path: Path) -> None:
    sample = _readme_block("`worker.properties`:")
    assert "plugin.path=/opt/cdc/plugins" in sample and not Path("/opt/cdc/plugins").exists()
    port = _free_port()
    # Only a listener is added, so that the test never meets another process on the default 8083.
    (tmp_path / "worker.properties").write_text(sample + f"listeners=http://127.0.0.1:{port}\n")
    log = tmp_path / "out.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            cdc_argv("standalone", "worker.properties"), cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, log.read_text()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/connectors", timeout=2) as r:
                    assert json.loads(r.read()) == []
                    break
            except OSError:
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.3)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0, log.read_text()
    output = log.read_text()
    assert "plugin.path entry '/opt/cdc/plugins' is not a directory, skipped" in output
    assert "error" not in output.lower(), output
    assert (tmp_path / ".cdc" / "cdc.db").exists()  # the sample's state.dir, relative to where it ran


def test_the_readme_job_sample_names_tables_as_it_says() -> None:
    sample = _readme_block("`cdc/jobs/job.schema.json`):")
    job, problems = validate_job_text(sample, "job.yaml", check_connectivity=False, inspect_only=True)
    assert job is not None, [p.render("job.yaml") for p in problems]
    namer = TableNamer(job)
    assert (namer.target("shop.orders"), namer.target("shop.customers")) == ("orders", "shop_customers")
    assert sink_config(job)["delete.mode"] == "hard"
