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

from cdc.runtime.logging_context import escape_controls
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
                [sys.executable, "-m", "cdc.runtime.task_child"],
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
        """The child's stderr (its log lines and its failure's trace) into the worker's stderr and the
        trace tail, with the connector's secrets hidden (StatusReporter.redact), as in-process tasks."""
        redact = getattr(self.listener, "redact", None)
        for raw in iter(stream.readline, b""):
            line = raw.decode(errors="replace")
            if callable(redact):
                line = redact(self.id, line)
            self._stderr.append(line)
            # One line of the child's is one line here: no raw control character (\r, ESC, NUL) in it.
            sys.stderr.write(f"[task {self.id}] {escape_controls(line.rstrip(chr(10)))}\n")

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
