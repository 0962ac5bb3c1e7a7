"""The child side of process isolation (`task.isolation=process`, see task_process.py): build a
worker from the spec on stdin and run exactly one task in-process until told to stop.

Kept apart from task_process.py, the parent side that the worker imports, so that the two
modules do not import each other: this one builds a Worker, the worker builds the parent.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
from typing import Any

from cdc.runtime.logging_context import TextFormatter
from cdc.runtime.plugins import PluginRegistry
from cdc.runtime.task import ConnectorTaskId
from cdc.runtime.task_process import FAILED_EXIT
from cdc.runtime.transport import open_log, open_offset_store
from cdc.runtime.worker import Worker
from cdc.runtime.worker_config import WorkerConfig
from cdc.storage.status import StatusBackingStore


class _SilentListener:
    """The child reports no state itself: the parent owns the task's status. Metrics go to the parent."""

    def __init__(self, metrics_out: Any = None) -> None:
        self._metrics_out = metrics_out

    def on_startup(self, id: ConnectorTaskId) -> None: ...

    def on_running(self, id: ConnectorTaskId) -> None: ...

    def on_pause(self, id: ConnectorTaskId) -> None: ...

    def on_failure(self, id: ConnectorTaskId, trace: str) -> None:
        sys.stderr.write(trace + "\n")

    def on_shutdown(self, id: ConnectorTaskId) -> None: ...

    def on_metrics(self, id: ConnectorTaskId, metrics: dict[str, Any]) -> None:
        if self._metrics_out is not None:
            self._metrics_out.write(json.dumps(metrics) + "\n")
            self._metrics_out.flush()


def main() -> None:
    """Child side: build a worker from the spec and run exactly one task in-process."""
    # The worker copies these lines into its own stderr: escaped as its own are (no forged lines).
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(TextFormatter("%(levelname)s %(message)s (%(name)s)"))
    logging.basicConfig(level=logging.WARNING, handlers=[handler])
    spec = json.loads(sys.stdin.read())
    config = WorkerConfig({**spec["worker"], "task.isolation": "thread"})
    registry = PluginRegistry.discover(config.get("plugin.path"))
    log_ = open_log(config)
    worker = Worker(config, registry, log_, open_offset_store(config, log_), StatusBackingStore(), spec["worker_id"])
    metrics_fd = spec.get("metrics_fd")
    metrics_out = os.fdopen(metrics_fd, "w") if metrics_fd is not None else None
    worker.reporter = _SilentListener(metrics_out)  # type: ignore[assignment]
    worker.offset_store.start()
    id = ConnectorTaskId(spec["id"][0], spec["id"][1])
    stop = threading.Event()
    task = worker.start_task(id, spec["connector"], spec["task"], spec["count"], paused=spec["paused"])
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGUSR1, lambda *_: task.pause())
    signal.signal(signal.SIGUSR2, lambda *_: task.resume())
    parent = spec.get("parent_pid")
    while not stop.wait(0.1) and task.is_running():
        if parent and os.getppid() != parent:
            # The worker died (kill -9): never outlive it, or the task would run twice once
            # another worker takes it over.
            sys.stderr.write(f"worker process {parent} is gone; stopping task {id}\n")
            break
    failed = task.failure is not None
    worker.stop_and_await_tasks([id])
    worker.offset_store.stop()
    log_.close()
    sys.stdout.flush()
    os._exit(FAILED_EXIT if failed else 0)


if __name__ == "__main__":
    main()
