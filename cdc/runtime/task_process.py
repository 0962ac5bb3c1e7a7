"""Process isolation: a task in its own OS process, supervised by the worker.

`task.isolation=process` gives each task its own interpreter: its own plugin imports and its
own GIL, so one connector's CPU-bound work or C-extension crash cannot stall or kill another.
The parent keeps a `ProcessWorkerTask` in `Worker.tasks`, so herders, status and restarts work
unchanged: the parent reports every state; the child only runs the task, against the same
transport (records and offsets go straight from the child to the log).

Protocol: the parent writes one JSON spec to the child's stdin (secrets never appear in argv);
SIGUSR1 pauses, SIGUSR2 resumes, SIGTERM stops. The child exits 0 when stopped, 1 when the
task failed (its trace on stderr), and anything else means it died. The task's metrics come back
as JSON lines on a pipe of their own (`metrics_fd`), and the parent publishes them.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Mapping
from typing import Any

from cdc.runtime.task import ConnectorTaskId, TaskStatusListener, WorkerTask

log = logging.getLogger(__name__)

FAILED_EXIT = 1


class TaskProcessError(Exception):
    """The task process failed or died; the message carries its last stderr lines."""


class ProcessWorkerTask(WorkerTask):
    def __init__(
        self,
        id: ConnectorTaskId,
        listener: TaskStatusListener,
        spec: Mapping[str, Any],
        stop_timeout: float,
    ) -> None:
        super().__init__(id, listener)
        self.spec = dict(spec)
        self.stop_timeout = stop_timeout
        self.process: subprocess.Popen[bytes] | None = None
        self._stderr: deque[str] = deque(maxlen=40)

    def execute(self) -> None:
        self.spec["paused"] = self.paused
        self.spec["parent_pid"] = os.getpid()
        metrics_in, metrics_out = os.pipe()
        self.spec["metrics_fd"] = metrics_out
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", "cdc.runtime.task_process"],
                stdin=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(metrics_out,),
            )
        except BaseException:
            os.close(metrics_in)
            raise
        finally:
            os.close(metrics_out)
        self.process = proc
        assert proc.stdin is not None and proc.stderr is not None
        proc.stdin.write(json.dumps(self.spec).encode())
        proc.stdin.close()
        reader = threading.Thread(target=self._drain, args=(proc.stderr,), daemon=True)
        reader.start()
        metrics = threading.Thread(target=self._forward_metrics, args=(metrics_in,), daemon=True)
        metrics.start()
        self.report_started()
        while proc.poll() is None:
            if self.stopping:
                self._terminate(proc)
                break
            time.sleep(0.05)
        reader.join(2)
        metrics.join(2)
        code = proc.returncode
        if self.stopping and code in (0, -signal.SIGTERM, -signal.SIGKILL):
            return
        tail = "".join(self._stderr).strip()
        if code == FAILED_EXIT:
            raise TaskProcessError(tail or f"task {self.id} failed")
        how = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
        raise TaskProcessError(f"The process of task {self.id} (pid {proc.pid}) {how}. Last output:\n{tail}")

    def _drain(self, stream: Any) -> None:
        for raw in iter(stream.readline, b""):
            line = raw.decode(errors="replace")
            self._stderr.append(line)
            sys.stderr.write(f"[task {self.id}] {line}")

    def _forward_metrics(self, fd: int) -> None:
        """The child's metrics, one JSON object a line, to this task's listener (the status store)."""
        on_metrics = getattr(self.listener, "on_metrics", None)
        with os.fdopen(fd, "rb") as stream:
            for raw in iter(stream.readline, b""):
                try:
                    metrics = json.loads(raw)
                except ValueError:
                    continue
                if on_metrics is not None and isinstance(metrics, dict):
                    try:
                        on_metrics(self.id, metrics)
                    except Exception as e:
                        log.warning("Task %s: publishing its metrics failed: %s", self.id, e)

    def _terminate(self, proc: subprocess.Popen[bytes]) -> None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(self.stop_timeout)
        except subprocess.TimeoutExpired:
            log.error("Task %s: process %d did not stop in time; killing it", self.id, proc.pid)
            proc.kill()
            proc.wait()

    def pause(self) -> None:
        super().pause()
        self._signal(signal.SIGUSR1)

    def resume(self) -> None:
        super().resume()
        self._signal(signal.SIGUSR2)

    def _signal(self, signum: int) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signum)


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
    from cdc.runtime.plugins import PluginRegistry
    from cdc.runtime.transport import open_log, open_offset_store
    from cdc.runtime.worker import Worker
    from cdc.runtime.worker_config import WorkerConfig
    from cdc.storage.status import StatusBackingStore

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(message)s (%(name)s)")
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
