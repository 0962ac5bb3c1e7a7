"""`make demo` fails loudly, saying what to install, when Java or MariaDB is missing.

The demo itself runs in CI as `make demo` (.ci/run), exactly as the README gives it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.proc import REPO


def _demo(path: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": path}
    return subprocess.run(
        [sys.executable, "examples/demo/run.py"], cwd=REPO, env=env, capture_output=True, text=True, timeout=60
    )


def test_demo_without_java_says_what_to_install(tmp_path: Path) -> None:
    res = _demo(str(tmp_path))  # an empty PATH: no java
    assert res.returncode == 1
    assert "Java is missing" in res.stderr and "apt-get install openjdk-17-jre-headless" in res.stderr
    assert "Traceback" not in res.stderr and "creating the environment" not in res.stdout


def test_demo_without_mariadb_says_what_to_install(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    # MariaDB is installed on this machine; its absence is simulated (the lookup finds nothing).
    from examples.demo import run
    from tests.rig import mariadb

    monkeypatch.setattr(mariadb, "local_binaries", lambda: None)
    with pytest.raises(SystemExit) as exit_:
        run.check_prerequisites()
    assert exit_.value.code == 1
    err = capsys.readouterr().err
    assert "MariaDB is missing" in err and "apt-get install mariadb-server" in err
