"""What every worker task shares: identity, the thread it runs on, pause/stop, status reports."""

from __future__ import annotations

import json
import logging
import threading
import time
import traceback
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Protocol

from cdc.api.errors import ConnectException
from cdc.api.metrics import TaskMetrics
from cdc.runtime import logging_context
from cdc.runtime.gc_tuning import raise_young_threshold
from cdc.runtime.task_meters import OffsetCommitMeter

log = logging.getLogger(__name__)

METRICS_INTERVAL_S = 2.0  # the most often a task's metrics are published, besides state changes


@dataclass(frozen=True, order=True)
class ConnectorTaskId:
    connector: str
    task: int

    def __str__(self) -> str:
        return f"{self.connector}-{self.task}"


class TaskStatusListener(Protocol):
    def on_startup(self, id: ConnectorTaskId) -> None: ...

    def on_running(self, id: ConnectorTaskId) -> None: ...

    def on_pause(self, id: ConnectorTaskId) -> None: ...

    def on_failure(self, id: ConnectorTaskId, trace: str) -> None: ...

    def on_shutdown(self, id: ConnectorTaskId) -> None: ...

    def on_topic(self, id: ConnectorTaskId, topic: str) -> None:
        """First record of `topic` for this task (KIP-558 active topics)."""

    def on_metrics(self, id: ConnectorTaskId, metrics: dict[str, Any]) -> None:
        """The task's metrics changed (cdc extension; optional for listeners)."""


class WorkerTask(ABC):
    """Runs `execute` on its own thread; `stop` asks it to finish, `pause`/`resume` gate it."""

    def __init__(self, id: ConnectorTaskId, listener: TaskStatusListener) -> None:
        self.id = id
        self.listener = listener
        self._stopping = threading.Event()
        self._paused = threading.Event()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self.failure: BaseException | None = None
        self.active_topics: set[str] = set()
        self.metrics = TaskMetrics()
        self.meter: object | None = None  # the worker's cdc.runtime.task_meters meter of the plugin's calls
        # connector-task-metrics offset-commit-* (cdc.runtime.task_meters.OffsetCommitMeter): set by the
        # runners that commit offsets here (source and sink), None for a task in another process.
        self.commits: OffsetCommitMeter | None = None
        self._metrics_next = 0.0
        self._metrics_due = False
        self._metrics_last: str | None = None
        self._metrics_failed = False

    def start(self, paused: bool = False) -> None:
        """`paused`: created for a PAUSED connector, so it never reports RUNNING first."""
        if paused:
            self._paused.set()
        self._thread = threading.Thread(target=self._run, name=f"task-{self.id}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        with logging_context.for_task(self.id.connector, self.id.task):  # `[name|task-0] ` on every line
            self._run_in_context()

    def _run_in_context(self) -> None:
        raise_young_threshold()
        try:
            if self.paused:
                self.listener.on_pause(self.id)
            else:
                self.listener.on_startup(self.id)
            self.execute()
            self.publish_metrics(force=True)
            if not self.failure:
                self.listener.on_shutdown(self.id)
        except BaseException as e:  # a failed task must report FAILED, never vanish
            self.failure = e
            self._log_failure(e, _is_advice(e))
            self.publish_metrics(force=True)
            self.listener.on_failure(self.id, _trace(e))
        finally:
            self._done.set()

    def _log_failure(self, e: BaseException, advice: bool) -> None:
        """One ERROR line; the trace too unless the connector explained the failure (then at DEBUG).

        When the message or trace holds a value the connector's config providers resolved,
        the listener's `redact` hides it and the redacted trace is logged as text.
        """
        redact = getattr(self.listener, "redact", None)
        message, trace = str(e), _trace(e)
        if callable(redact):
            hidden_message, hidden_trace = redact(self.id, message), redact(self.id, trace)
            if (hidden_message, hidden_trace) != (message, trace):
                log.error("Task %s failed: %s", self.id, hidden_message)
                log.log(logging.DEBUG if advice else logging.ERROR, "Task %s failure trace\n%s", self.id, hidden_trace)
                return
        log.error("Task %s failed: %s", self.id, e, exc_info=not advice)
        if advice:
            log.debug("Task %s failure trace", self.id, exc_info=e)

    @abstractmethod
    def execute(self) -> None: ...

    def publish_metrics(self, force: bool = False) -> None:
        """On the task's thread: hand changed metrics to the listener, at most every METRICS_INTERVAL_S.

        Suppliers run here, between polls, so they never race the task's own thread. `force`
        (stop, failure) and a pending state change publish at once.
        """
        now = time.monotonic()
        if not (force or self._metrics_due or now >= self._metrics_next):
            return
        self._metrics_due = False
        self._metrics_next = now + METRICS_INTERVAL_S
        try:
            snapshot = self.metrics.snapshot()
            encoded = json.dumps(snapshot, sort_keys=True, default=str)
        except Exception as e:  # a plugin's metrics must never stop its task
            if not self._metrics_failed:
                log.warning("Task %s: computing its metrics failed, they are not published: %s", self.id, e)
                self._metrics_failed = True
            return
        if not snapshot or encoded == self._metrics_last:
            return
        self._metrics_last = encoded
        on_metrics = getattr(self.listener, "on_metrics", None)
        if on_metrics is not None:
            try:
                on_metrics(self.id, json.loads(encoded))
            except Exception as e:
                log.warning("Task %s: publishing its metrics failed: %s", self.id, e)

    def report_started(self) -> None:
        """After the plugin task's start(): RUNNING, or PAUSED when created paused."""
        self._metrics_due = True
        if self.paused:
            self.listener.on_pause(self.id)
        else:
            self.listener.on_running(self.id)

    def track_topic(self, topic: str) -> None:
        if topic not in self.active_topics:
            self.active_topics.add(topic)
            on_topic = getattr(self.listener, "on_topic", None)
            if on_topic is not None:
                on_topic(self.id, topic)

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def stop(self) -> None:
        self._stopping.set()
        self._paused.clear()

    def pause(self) -> None:
        self._paused.set()
        self._metrics_due = True
        self.listener.on_pause(self.id)

    def resume(self) -> None:
        self._paused.clear()
        self._metrics_due = True
        self.listener.on_running(self.id)

    @property
    def paused(self) -> bool:
        return self._paused.is_set()

    def await_stop(self, timeout: float) -> bool:
        return self._done.wait(timeout)

    def is_running(self) -> bool:
        return self._thread is not None and not self._done.is_set()


def _is_advice(e: BaseException) -> bool:
    """A ConnectException is a condition the connector recognised and explained (a refused
    login, a purged binlog): its message is the advice, and its trace goes to DEBUG and to the
    task status. Anything else is a bug and is logged with its trace."""
    from cdc.runtime.errors import ToleranceExceededError

    return isinstance(e, (ConnectException, ToleranceExceededError))


def _trace(e: BaseException) -> str:
    return "".join(traceback.format_exception(e)).strip()
