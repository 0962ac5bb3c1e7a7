"""`errors.tolerance` for converter and SMT failures (Kafka Connect's RetryWithToleranceOperator).

With `none` the first failure fails the task; with `all` the record is skipped, logged if
`errors.log.enable`, and counted. Either way nothing is dropped silently.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any, TypeVar

from cdc.api.errors import RetriableException

log = logging.getLogger(__name__)

T = TypeVar("T")


class Stage(Enum):
    TRANSFORMATION = "TRANSFORMATION"
    KEY_CONVERTER = "KEY_CONVERTER"
    VALUE_CONVERTER = "VALUE_CONVERTER"
    HEADER_CONVERTER = "HEADER_CONVERTER"
    TASK_PUT = "TASK_PUT"
    TASK_POLL = "TASK_POLL"
    KAFKA_PRODUCE = "KAFKA_PRODUCE"
    KAFKA_CONSUME = "KAFKA_CONSUME"


class ToleranceExceededError(Exception):
    """A stage failed and errors.tolerance=none: the task must fail with this message."""


class _Skip:
    def __repr__(self) -> str:
        return "SKIP"


SKIP: Any = _Skip()


@dataclass
class ErrorStats:
    total_errors: int = 0
    skipped_records: int = 0


class RetryWithToleranceOperator:
    def __init__(
        self,
        task_id: str,
        tolerance: str = "none",
        log_enable: bool = False,
        include_messages: bool = False,
        retry_timeout_ms: int = 0,
        retry_delay_max_ms: int = 60000,
        report: Callable[[Any, Exception, Stage], None] | None = None,
    ) -> None:
        self.task_id = task_id
        self.tolerate_all = tolerance == "all"
        self.log_enable = log_enable
        self.include_messages = include_messages
        self.retry_timeout_ms = retry_timeout_ms
        self.retry_delay_max_ms = retry_delay_max_ms
        self.stats = ErrorStats()
        self._reporters: list[Callable[[Any, Exception, Stage], None]] = [report] if report else []

    def execute(self, stage: Stage, executing: object, fn: Callable[[], T], record: Any) -> T:
        """The result of `fn`, or SKIP when it failed and the failure is tolerated."""
        deadline = time.monotonic() + self.retry_timeout_ms / 1000 if self.retry_timeout_ms else 0
        delay = 0.3
        while True:
            try:
                return fn()
            except RetriableException as e:
                if (self.retry_timeout_ms == -1 or time.monotonic() < deadline) and self.retry_timeout_ms:
                    time.sleep(min(delay, self.retry_delay_max_ms / 1000))
                    delay *= 2
                    continue
                return self._fail(stage, executing, record, e)
            except Exception as e:
                return self._fail(stage, executing, record, e)

    def _fail(self, stage: Stage, executing: object, record: Any, error: Exception) -> Any:
        self.stats.total_errors += 1
        where = f"{stage.value} with class '{_name(executing)}'"
        message = f"Error in task {self.task_id} executing stage {where}: {type(error).__name__}: {error}"
        if self.include_messages and record is not None:
            message += f" (record: {record!r})"
        if not self.tolerate_all:
            raise ToleranceExceededError(
                message + ". Fix the data or the configuration, or set errors.tolerance=all to skip such records"
            ) from error
        self.stats.skipped_records += 1
        if self.log_enable:
            log.error("%s; record skipped (errors.tolerance=all)", message)
        for reporter in self._reporters:
            reporter(record, error, stage)
        return SKIP

    def add_reporter(self, reporter: Callable[[Any, Exception, Stage], None]) -> None:
        """Called for every tolerated failure (the sink's dead letter queue uses this)."""
        self._reporters.append(reporter)


def _name(obj: object) -> str:
    cls = obj if isinstance(obj, type) else type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"
