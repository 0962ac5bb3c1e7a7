"""`cdc run`'s live per-table view on a terminal: snapshot rows done / estimate with rate and
ETA, streaming events/s and lag, and what the sink applied per table.

Drawn with rich's `Live` on stderr, where the run's log lines go, and only when stderr is a
terminal (not a dumb one); otherwise the run prints its plain log lines alone
(cdc_debezium.progress logs snapshot progress with rate and ETA every few seconds). While the
view is up, the root logger's stderr handlers write through rich's stderr proxy, so log lines
scroll above the view instead of tearing it; Spark's JVM writes to the file descriptor
directly, and the next refresh redraws over it.

The figures are read in-process, as a scrape would read them: the source task's metrics from
the worker (cdc.runtime.prometheus.view: Debezium's RowsScanned, TotalNumberOfEventsSeen,
MilliSecondsBehindSource, and cdc's RowsEstimated and BytesBehindSource, published by the task
at most every 2 s with their time) and the sink's from `cdc_spark.apply.metrics`. Rates are
differences between published values over the last `WINDOW_S` seconds, so they follow the
current pace rather than the run's average. rich's `Progress` was checked and not used: its
tasks need a known total and one update call per advance, while these figures arrive as
published totals whose estimate may be short of the table.
"""

from __future__ import annotations

import logging
import sys
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text

from cdc.api import metrics as m
from cdc.runtime.prometheus.view import worker_view

if TYPE_CHECKING:
    from cdc_spark.apply.metrics import SinkMetrics

log = logging.getLogger(__name__)

WINDOW_S = 10.0  # rates are taken over the values published in the last 10 s
REFRESH_PER_S = 2


class Series:
    """A total sampled over time; its rate over the last `WINDOW_S` seconds of samples."""

    def __init__(self) -> None:
        self._samples: deque[tuple[float, float]] = deque()

    def add(self, at_s: float, value: float) -> None:
        """The total `value` as of `at_s` (seconds); a repeat of the last sample's time is ignored."""
        if self._samples and at_s <= self._samples[-1][0]:
            return
        self._samples.append((at_s, value))
        while len(self._samples) > 2 and at_s - self._samples[1][0] >= WINDOW_S:
            self._samples.popleft()

    def rate(self) -> float | None:
        """Per second, or None before two samples."""
        if len(self._samples) < 2:
            return None
        (t0, v0), (t1, v1) = self._samples[0], self._samples[-1]
        return max(0.0, (v1 - v0) / (t1 - t0))

    def moved_since(self, at_s: float) -> bool:
        """Whether the total changed after `at_s`."""
        changed = [t for (t, v), (_, prev) in zip(list(self._samples)[1:], self._samples, strict=False) if v != prev]
        return bool(changed) and changed[-1] > at_s


def duration(seconds: float) -> str:
    """`1h02m`, `3m05s`, `42s`."""
    s = int(seconds)
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:,.1f} GiB"


def _count(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


class LiveView:
    """The view's figures and their rendering; `start`/`stop` put it on the terminal."""

    def __init__(
        self,
        title: str,
        herder: Any,
        table_for: Callable[[str], str],
        sink_metrics: SinkMetrics | None = None,
        tables: tuple[str, ...] = (),
        console: Console | None = None,
    ) -> None:
        """`table_for(source table)`: the target table its changes go to; `tables`: the source
        tables the job names (shown before their first figures)."""
        self.title = title
        self.herder = herder
        self.table_for = table_for
        self.sink_metrics = sink_metrics
        self.tables = tables
        self.console = console or Console(stderr=True)
        self._rows: dict[str, Series] = {}
        self._events = Series()
        self._applied: dict[str, Series] = {}
        self._live: Live | None = None
        self._swapped: list[tuple[logging.StreamHandler[Any], Any]] = []
        self._last: RenderableType = Text("")
        self._last_source: tuple[Mapping[str, Any], float] = ({}, 0.0)

    # -- figures ------------------------------------------------------------------------------
    def _source(self) -> tuple[Mapping[str, Any], float]:
        """The source task's last published metrics and their time (s); empty before any. Once
        the task is gone (`--until-caught-up` stops the source before the sink's last batches),
        its last values stay."""
        for t in worker_view(self.herder).tasks:
            if t.type == "source" and t.metrics:
                self._last_source = (t.metrics, (t.metrics_ms or 0) / 1000)
                break
        return self._last_source

    def render(self) -> RenderableType:
        values, at = self._source()
        now = time.time()
        scanned: Mapping[str, Any] = values.get(m.ROWS_SCANNED) or {}
        estimates: Mapping[str, Any] = values.get(m.ROWS_ESTIMATED) or {}
        for table, rows in scanned.items():
            self._rows.setdefault(table, Series()).add(at, _count(rows))
        self._events.add(at, _count(values.get(m.TOTAL_NUMBER_OF_EVENTS_SEEN)))
        sink = self.sink_metrics.snapshot() if self.sink_metrics is not None else {}
        for target, figures in sink.items():
            self._applied.setdefault(target, Series()).add(now, figures.rows_applied)

        running, completed = bool(values.get(m.SNAPSHOT_RUNNING)), bool(values.get(m.SNAPSHOT_COMPLETED))
        grid = Table(title=self.title, title_justify="left", expand=False)
        for name, justify in (
            ("table", "left"),
            ("snapshot rows", "right"),
            ("rate", "right"),
            ("ETA", "right"),
            ("applied", "right"),
            ("sink lag", "right"),
        ):
            grid.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
        order = list(dict.fromkeys([*self.tables, *scanned]))
        active = list(scanned)[-1] if running and scanned else None  # tables are snapshotted in turn
        shown_targets: set[str] = set()
        for table in order:
            target = self.table_for(table)
            shown_targets.add(target)
            grid.add_row(
                table,
                *self._snapshot_cells(table, scanned, estimates, completed, active, at),
                *self._sink(target, sink),
            )
        for target in sorted(set(sink) - shown_targets):
            grid.add_row(target, "", "", "", *self._sink(target, sink))
        return Group(grid, Text(self._source_line(values, running, completed, now)))

    def _snapshot_cells(
        self,
        table: str,
        scanned: Mapping[str, Any],
        estimates: Mapping[str, Any],
        completed: bool,
        active: str | None,
        at: float,
    ) -> tuple[str, str, str]:
        if table not in scanned:
            return ("", "", "")
        rows, estimate = _count(scanned[table]), _count(estimates.get(table))
        series = self._rows[table]
        done = completed or (table != active and not series.moved_since(at - WINDOW_S / 2))
        rate = series.rate()
        if done:
            return (f"{rows:,} done", "", "")
        share = f" ({min(99, rows * 100 // estimate)}%)" if estimate else ""
        cells = f"{rows:,} / {estimate:,}{share}" if estimate else f"{rows:,} / ?"
        if rate is None:
            return (cells, "…", "…")
        eta = duration((estimate - rows) / rate) if rate > 0 and estimate > rows else "—"
        return (cells, f"{rate:,.0f} rows/s", eta)

    def _sink(self, target: str, sink: Mapping[str, Any]) -> tuple[str, str]:
        figures = sink.get(target)
        if figures is None:
            return ("", "")
        rate = self._applied[target].rate()
        applied = f"{figures.rows_applied:,}" + (f" ({rate:,.0f}/s)" if rate else "")
        if figures.rows_rejected:
            applied += f", {figures.rows_rejected:,} rejected"
        lag = f"{figures.lag_ms / 1000:,.1f} s" if figures.lag_ms is not None else ""
        return (applied, lag)

    def _source_line(self, values: Mapping[str, Any], running: bool, completed: bool, now: float) -> str:
        if not values:
            return "source: starting"
        parts = []
        if running:
            total, left = _count(values.get(m.TOTAL_TABLE_COUNT)), _count(values.get(m.REMAINING_TABLE_COUNT))
            parts.append(f"snapshot running, {total - left} of {total} tables done")
        elif completed:
            parts.append("snapshot done")
        if not running and (completed or values.get(m.CONNECTED)):
            rate = self._events.rate()
            parts.append(f"streaming {rate:,.0f} events/s" if rate is not None else "streaming")
            lag = values.get(m.MILLISECONDS_BEHIND_SOURCE)
            if isinstance(lag, int | float):
                parts.append(f"{lag / 1000:,.1f} s behind the source")
        unread = values.get(m.BYTES_BEHIND_SOURCE)
        if isinstance(unread, int | float):
            parts.append(f"{_size(unread)} of the source log unread")
        return "source: " + (", ".join(parts) or "starting")

    def _render_safely(self) -> RenderableType:
        """On rich's refresh thread: a failure keeps the last view (and is logged at DEBUG)."""
        try:
            self._last = self.render()
        except Exception:
            log.debug("the live view could not read the run's figures", exc_info=True)
        return self._last

    # -- on the terminal ------------------------------------------------------------------------
    def start(self) -> None:
        original = sys.stderr
        self._live = Live(
            get_renderable=self._render_safely,
            console=self.console,
            refresh_per_second=REFRESH_PER_S,
            redirect_stdout=True,
            redirect_stderr=True,
        )
        self._live.start()
        for handler in logging.getLogger().handlers:  # log lines above the view, not through it
            if isinstance(handler, logging.StreamHandler) and handler.stream in (original, sys.__stderr__):
                self._swapped.append((handler, handler.setStream(sys.stderr)))

    def stop(self) -> None:
        for handler, stream in self._swapped:
            handler.setStream(stream)
        self._swapped = []
        if self._live is not None:
            self._live.stop()
            self._live = None


def on_terminal() -> bool:
    """Whether stderr is a terminal that can redraw (not a pipe, a file, or TERM=dumb)."""
    console = Console(stderr=True)
    return sys.stderr.isatty() and console.is_terminal and not console.is_dumb_terminal
