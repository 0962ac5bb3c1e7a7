"""Retention for the embedded log: what a Kafka broker's log cleaner does for its topics.

Without it an embedded log grows by every change event forever. Every
`log.retention.check.interval.ms` the worker moves each delete-policy topic's start past
the records older than its `retention.ms` (7 days by default, -1 forever: the schema
history topics). Compacted topics (offsets, configs, status) are left alone. A reader
that comes back for deleted records is told so (the Spark source's failOnDataLoss).
"""

from __future__ import annotations

import logging
import threading

from cdc.log.embedded import EmbeddedLog

log = logging.getLogger(__name__)


class LogCleaner:
    def __init__(self, log_: EmbeddedLog, interval_ms: int) -> None:
        self.log = log_
        self.interval_s = interval_ms / 1000
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="embedded-log-cleaner", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                moved = self.log.enforce_retention()
            except Exception as e:  # a busy or closed log: try again next round, never kill the worker
                log.warning("embedded log retention check failed (will retry): %s", e)
                continue
            if moved:
                log.info("embedded log retention: moved the start of %d partition(s) past expired records", moved)
