"""The Java that Spark's launcher will run, checked before `cdc run` starts anything.

PySpark starts the JVM through `bin/spark-class`, which runs `$JAVA_HOME/bin/java` when
JAVA_HOME is set and `java` from PATH otherwise; without one, or with a Java older than the
installed PySpark supports, PySpark only says `JAVA_GATEWAY_EXITED`. This module finds the
same binary and asks its version, so the failure is one line that says what to install.
(`findjava`-style helpers, e.g. the `install-jdk` package, install a JDK; none checks one.)
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from importlib import metadata

from cdc.api.errors import ConnectException

_VERSION = re.compile(r'version "(\d+)(?:\.(\d+))?')
_INSTALL = "install a JDK or JRE {major}+ (e.g. apt-get install openjdk-{major}-jre-headless) or point JAVA_HOME at one"


def required_java(pyspark_version: str | None = None) -> int:
    """The oldest Java major version the installed PySpark runs on: 17 for Spark 4, 8 before."""
    if pyspark_version is None:
        try:
            pyspark_version = metadata.version("pyspark")
        except metadata.PackageNotFoundError:
            return 17
    return 17 if int(pyspark_version.split(".")[0]) >= 4 else 8


def java_major(version_output: str) -> int | None:
    """`openjdk version "17.0.15"` → 17; `java version "1.8.0_392"` → 8; None when unreadable."""
    m = _VERSION.search(version_output)
    if m is None:
        return None
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major


def find_java(env: dict[str, str] | None = None) -> tuple[str | None, str]:
    """The java binary spark-class would run (None when there is none), and where it came from."""
    env = dict(os.environ) if env is None else env
    home = env.get("JAVA_HOME")
    if home:
        java = os.path.join(home, "bin", "java")
        return (java if os.access(java, os.X_OK) else None), f"JAVA_HOME={home}"
    return shutil.which("java", path=env.get("PATH")), "PATH"


def check_java(env: dict[str, str] | None = None) -> None:
    """Raise one line naming what to install when Spark cannot start for want of a Java."""
    need = required_java()
    java, where = find_java(env)
    if java is None:
        detail = "has no bin/java" if where.startswith("JAVA_HOME") else "has no java"
        raise ConnectException(f"Spark needs Java {need} or later and {where} {detail}: " + _INSTALL.format(major=need))
    try:
        done = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30, env=env)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ConnectException(f"{java} -version failed ({e}): " + _INSTALL.format(major=need)) from None
    major = java_major(done.stderr + done.stdout)
    if major is not None and major < need:
        raise ConnectException(
            f"Spark {metadata.version('pyspark')} needs Java {need} or later, and {java} (from {where}) is "
            f"Java {major}: " + _INSTALL.format(major=need)
        )
