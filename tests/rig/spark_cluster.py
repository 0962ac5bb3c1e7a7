"""A Spark standalone cluster (one master, one worker) from the pyspark wheel's own jars.

The executor runs in the worker's JVM and its Python workers are separate processes, as
on a real cluster: nothing the driver holds in memory reaches them except by Spark. Both
daemons listen on 127.0.0.1 on free ports, the web UIs too (the master's `/json` lists
the applications it ran). Executors run the driver's Python (PySpark passes its
PYSPARK_PYTHON on). ``CDC_TEST_SPARK_MASTER`` names an existing cluster instead.
"""

from __future__ import annotations

import json
import os
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from ._common import Daemon, free_port, temp_dir

ENV_MASTER = "CDC_TEST_SPARK_MASTER"
START_TIMEOUT = 90.0  # two JVMs on a busy 2-core machine


@dataclass(frozen=True)
class SparkCluster:
    master: str  # spark://host:port
    web_ui: str | None = None  # http://host:port of the master's UI, whose /json lists applications

    def application_names(self) -> set[str]:
        """The names of the applications the master has run or runs (needs ``web_ui``)."""
        if self.web_ui is None:
            raise RuntimeError("this cluster's master UI address is unknown")
        with urllib.request.urlopen(f"{self.web_ui}/json/", timeout=10) as resp:
            state = json.load(resp)
        return {a["name"] for a in state.get("activeapps", []) + state.get("completedapps", [])}


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def _registered(log: Path, needle: str) -> bool:
    return log.exists() and needle in log.read_text(errors="replace")


@contextmanager
def provide(cores: int = 2, memory: str = "1g") -> Iterator[SparkCluster]:
    if master := os.environ.get(ENV_MASTER):
        yield SparkCluster(master)
        return
    home = _spark_home()
    spark_class = str(home / "bin" / "spark-class")
    with ExitStack() as stack:
        work = stack.enter_context(temp_dir("cdc-spark-"))
        port, ui_port = free_port(), free_port()
        master_url = f"spark://127.0.0.1:{port}"
        master_log = work / "master.log"
        master = Daemon(
            "spark master",
            [
                spark_class,
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                str(ui_port),
            ],
            master_log,
            lambda: _registered(master_log, "I have been elected leader"),
            cwd=work,
        )
        master.start(START_TIMEOUT)
        stack.callback(master.kill)
        worker_log = work / "worker.log"
        worker = Daemon(
            "spark worker",
            [
                spark_class,
                "org.apache.spark.deploy.worker.Worker",
                master_url,
                "--host",
                "127.0.0.1",
                "--cores",
                str(cores),
                "--memory",
                memory,
                "--webui-port",
                str(free_port()),
                "--work-dir",
                str(work / "work"),
            ],
            worker_log,
            lambda: _registered(worker_log, "Successfully registered with master"),
            cwd=work,
        )
        worker.start(START_TIMEOUT)
        stack.callback(worker.kill)
        yield SparkCluster(master_url, f"http://127.0.0.1:{ui_port}")
