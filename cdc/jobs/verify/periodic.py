"""Verify on a schedule inside `cdc run` (the job key `verify`): drift found the hour it appears.

Every `interval.seconds` the running job verifies itself online (job.verify_online: the source in
one snapshot at a position X, the lake once it applied X), with the same settings `cdc verify`
takes (`sample`, `tables`, `max.diffs`, `wait.timeout.seconds`). A run never stops the job: a
database that cannot be read, or a lake that does not reach X in time, is a failed run, logged
and counted. Each run's outcome is:

- written to `<state.dir>/verify-<job>.json` (VerifyOutcome), which `cdc status` shows;
- exported on the job's `metrics.port`: `cdc_verify_differences{table}` (of the last run that
  completed), `cdc_verify_last_run_timestamp` (its end, Unix seconds), `cdc_verify_runs_total`
  and `cdc_verify_failures_total`;
- logged: one line per run, with the differing tables.

The run reads the source with its own connections and the lake with the target's library, as
`cdc verify` does; nothing is written to either.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from cdc.jobs.spec import JobSpec

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class VerifySchedule:
    """The job's `verify` settings (validated by job.schema.json)."""

    interval_s: int
    sample: int | None = None
    tables: tuple[str, ...] = ()
    max_diffs: int = 20
    wait_timeout_s: int = 600

    @classmethod
    def of(cls, job: JobSpec) -> VerifySchedule | None:
        """The schedule, or None when the job does not verify itself."""
        given = job.verify or {}
        if not given:
            return None
        return cls(
            int(given["interval.seconds"]),
            int(given["sample"]) if given.get("sample") is not None else None,
            tuple(str(t) for t in given.get("tables") or ()),
            int(given.get("max.diffs", 20)),
            int(given.get("wait.timeout.seconds", 600)),
        )


@dataclass
class VerifyOutcome:
    """One scheduled run: when, where the source was read, and what differed per table."""

    started_ms: int
    finished_ms: int = 0
    position: str | None = None
    # table -> {"differences", "missing", "changed", "extra", "duplicates"}
    tables: dict[str, dict[str, int]] = field(default_factory=dict)
    error: str | None = None
    sample: dict[str, int] | None = None
    skipped: dict[str, str] = field(default_factory=dict)  # table -> why it could not be compared

    @property
    def differences(self) -> int:
        return sum(t["differences"] for t in self.tables.values())

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> VerifyOutcome:
        return cls(**data)

    def describe(self) -> str:
        """One line for the log and `cdc status`."""
        at = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self.finished_ms / 1000))
        if self.error:
            return f"last run at {at} failed: {self.error}"
        where = f" (source read at {self.position})" if self.position else ""
        sampled = ""
        if self.sample:
            sampled = f", a sample of {self.sample['keys']} keys per table (seed {self.sample['seed']})"
        skipped = "".join(f"; {name} not compared: {why}" for name, why in sorted(self.skipped.items()))
        if not self.differences:
            return f"last run at {at}{where}{sampled}: no differences in {len(self.tables)} tables{skipped}"
        kinds = ("missing", "changed", "extra", "duplicates")
        differing = "; ".join(
            f"{name}: " + ", ".join(f"{t[kind]} {kind}" for kind in kinds if t[kind])
            for name, t in sorted(self.tables.items())
            if t["differences"]
        )
        return (
            f"last run at {at}{where}{sampled}: {self.differences} differences ({differing}){skipped}; "
            "cdc verify shows them"
        )


def outcome_path(job: JobSpec) -> Path:
    return Path(job.worker_config()["state.dir"]) / f"verify-{job.name}.json"


def read_outcome(job: JobSpec) -> VerifyOutcome | None:
    """The last scheduled run's outcome, or None (never ran, or an unreadable file)."""
    try:
        return VerifyOutcome.from_json(json.loads(outcome_path(job).read_text()))
    except (OSError, ValueError, TypeError):
        return None


def _write_outcome(job: JobSpec, outcome: VerifyOutcome) -> None:
    """Atomically (a reader never sees half a file), private like the rest of state.dir."""
    path = outcome_path(job)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(outcome.to_json(), f)
    os.replace(tmp, path)


class VerifyFigures:
    """The figures `VerifyCollector` exports, updated by each run (a lock: the scrape reads them)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.runs = 0
        self.failures = 0
        self.last: VerifyOutcome | None = None  # the last run that completed

    def record(self, outcome: VerifyOutcome) -> None:
        with self._lock:
            self.runs += 1
            if outcome.error:
                self.failures += 1
            else:
                self.last = outcome

    def snapshot(self) -> tuple[int, int, VerifyOutcome | None]:
        with self._lock:
            return self.runs, self.failures, self.last


class VerifyCollector(Collector):
    def __init__(self, figures: VerifyFigures) -> None:
        self.figures = figures

    def collect(self) -> Iterator[Metric]:
        runs, failures, last = self.figures.snapshot()
        yield CounterMetricFamily("cdc_verify_runs", "cdc: scheduled verify runs (the job key verify)", value=runs)
        yield CounterMetricFamily(
            "cdc_verify_failures", "cdc: scheduled verify runs that could not compare (logged)", value=failures
        )
        if last is None:
            return
        diffs = GaugeMetricFamily(
            "cdc_verify_differences", "cdc: differences per table in the last completed verify run", labels=["table"]
        )
        for table, t in sorted(last.tables.items()):
            diffs.add_metric([table], t["differences"])
        yield diffs
        yield GaugeMetricFamily(
            "cdc_verify_last_run_timestamp",
            "cdc: when the last completed verify run ended (Unix seconds)",
            value=last.finished_ms / 1000,
        )

    def describe(self) -> list[Metric]:
        return []


class PeriodicVerify:
    """A daemon thread of `cdc run` that verifies the job every `schedule.interval_s` seconds."""

    def __init__(self, job: JobSpec, schedule: VerifySchedule, figures: VerifyFigures) -> None:
        self.job = job
        self.schedule = schedule
        self.figures = figures
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"verify-{job.name}", daemon=True)

    def start(self) -> PeriodicVerify:
        log.info("verify: every %d s (the job key verify)", self.schedule.interval_s)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)  # a run in progress ends with the process (daemon); it writes nothing

    def _loop(self) -> None:
        while not self._stop.wait(self.schedule.interval_s):
            outcome = self.run_once()
            if outcome is None:
                continue  # the sink has committed no batch yet: nothing to compare (not a failure)
            if self._stop.is_set():
                return  # the job is stopping: the comparison may have been cut short
            self.figures.record(outcome)
            _write_outcome(self.job, outcome)
            (log.warning if outcome.error or outcome.differences else log.info)("verify: %s", outcome.describe())

    def run_once(self) -> VerifyOutcome | None:
        """One online verify; None before the sink's first batch (JobNotRunYet)."""
        from cdc.jobs.verify.job import JobNotRunYet, Verifier, verify_online
        from cdc.jobs.verify.sample import new_seed

        s = self.schedule
        outcome = VerifyOutcome(started_ms=int(time.time() * 1000))
        picked = (s.sample, new_seed()) if s.sample is not None else None
        if picked is not None:
            outcome.sample = {"keys": picked[0], "seed": picked[1]}
        try:
            with Verifier(self.job, lambda message: log.debug("verify: %s", message)) as v:
                results, _passed, run = verify_online(v, list(s.tables) or None, s.max_diffs, s.wait_timeout_s, picked)
            outcome.position = run.position
            outcome.skipped = {r.source: r.skipped for r in results if r.skipped}
            outcome.tables = {
                r.source: {
                    "differences": r.differences,
                    "missing": r.missing,
                    "changed": r.changed,
                    "extra": r.extra,
                    "duplicates": r.duplicates,
                }
                for r in results
                if not r.skipped
            }
        except JobNotRunYet:
            log.info("verify: the sink has committed no batch yet; the next run is in %d s", s.interval_s)
            return None
        except Exception as e:  # a run that cannot compare never stops the job
            outcome.error = " ".join((str(e) or type(e).__name__).split())
        outcome.finished_ms = int(time.time() * 1000)
        return outcome
