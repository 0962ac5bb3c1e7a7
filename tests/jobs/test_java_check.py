"""`cdc run` without a usable Java (issue 24): one line saying what to install, before anything
starts, instead of PySpark's bare JAVA_GATEWAY_EXITED.

Only Java 17 is installed here, so an old Java is a stand-in script that answers `-version` as
Java 11 and 8 do (their real output lines); the missing Java is real (a PATH without it)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cdc.jobs.java_check import check_java, java_major, required_java
from tests.support.proc import run_cdc

_JOB = """name: j
source: {{connector.class: mysql, database.hostname: 127.0.0.1, database.port: 1, database.user: u,
  database.server.id: 3, topic.prefix: p}}
transport: {{state.dir: '{state}'}}
sink: {{type: delta, path: '{lake}'}}
"""


def _job(tmp_path: Path) -> Path:
    job = tmp_path / "job.yaml"
    job.write_text(_JOB.format(state=tmp_path / "state", lake=tmp_path / "lake"))
    return job


def _fake_java(home: Path, version_line: str) -> None:
    java = home / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text(f"#!/bin/sh\necho '{version_line}' >&2\n")
    java.chmod(java.stat().st_mode | stat.S_IXUSR)


@given(st.integers(9, 40), st.integers(0, 30), st.integers(0, 99))
def test_java_major_reads_both_version_schemes(major, minor, patch) -> None:
    assert java_major(f'openjdk version "{major}.{minor}.{patch}" 2025-04-15') == major
    assert java_major(f'openjdk version "{major}" 2021-09-14') == major
    assert java_major(f'java version "1.{min(major, 8)}.0_{patch}"') == min(major, 8)


@pytest.mark.e2e
def test_the_installed_java_passes() -> None:
    check_java()  # Java 17 with PySpark 4 on this machine
    assert required_java("4.0.1") == 17 and required_java("3.5.3") == 8


@pytest.mark.e2e
def test_no_java_on_path_is_one_line(tmp_path: Path) -> None:
    env = {"JAVA_HOME": "", "PATH": str(tmp_path)}  # PATH without java (cdc runs by absolute interpreter path)
    res = run_cdc("run", str(_job(tmp_path)), env=env)
    assert res.returncode == 1 and res.stdout == ""
    assert res.stderr == (
        "error: Spark needs Java 17 or later and PATH has no java: install a JDK or JRE 17+ (e.g. apt-get install "
        "openjdk-17-jre-headless) or point JAVA_HOME at one\n"
    )
    assert not (tmp_path / "state").exists()  # nothing started


@pytest.mark.e2e
def test_java_home_without_java_is_one_line(tmp_path: Path) -> None:
    res = run_cdc("run", str(_job(tmp_path)), env={"JAVA_HOME": str(tmp_path / "jdk")})
    assert res.returncode == 1
    home = tmp_path / "jdk"
    assert res.stderr.startswith(f"error: Spark needs Java 17 or later and JAVA_HOME={home} has no bin/java")
    assert res.stderr.count("\n") == 1


@pytest.mark.e2e
@pytest.mark.parametrize("line,major", [('openjdk version "11.0.22" 2024-01-16', 11), ('java version "1.8.0_392"', 8)])
def test_a_java_too_old_for_pyspark_is_one_line(tmp_path: Path, line: str, major: int) -> None:
    _fake_java(tmp_path / "jdk", line)
    res = run_cdc("run", str(_job(tmp_path)), env={"JAVA_HOME": str(tmp_path / "jdk")})
    assert res.returncode == 1
    text = res.stderr
    assert text.startswith("error: Spark 4.") and f"is Java {major}: install a JDK or JRE 17+" in text
    assert text.count("\n") == 1 and "JAVA_GATEWAY_EXITED" not in text
    assert os.fspath(tmp_path / "jdk" / "bin" / "java") in text
