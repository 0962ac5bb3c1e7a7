"""Shared helpers of the benchmark scripts: best-of-N timing and the one-line JSON output.

Every figure is printed as one JSON line `{"metric","value","unit","baseline","ratio"}`
(ARCHITECTURE.md, "Benchmarks"). `baseline` is the bare library doing the same work in the
same run; `ratio` is value/baseline, so for a throughput (higher is better) a ratio
below 1 is the share of the bare library's speed that our code keeps.
"""

from __future__ import annotations

import gc
import json
import sys
import time
from collections.abc import Callable

RUNS = 3


def help_or_run(doc: str | None) -> None:
    """`--help`/`-h` prints the script's docstring (what it measures, its environment knobs) and exits.

    The scripts take their settings from the environment (BENCH_*), not from arguments, so this is
    all the parsing they need; any other argument is refused rather than ignored.
    """
    args = sys.argv[1:]
    if any(a in ("-h", "--help") for a in args):
        print((doc or "").strip())
        raise SystemExit(0)
    if args:
        print(f"unexpected arguments {' '.join(args)}: this script takes none (see --help for its settings)",
              file=sys.stderr)  # fmt: skip
        raise SystemExit(2)


def timed(fn: Callable[[], object]) -> float:
    """Seconds one call of `fn` takes (after a collection, so earlier garbage is not billed)."""
    gc.collect()
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def best_of_pair(ours: Callable[[], float], bare: Callable[[], float], runs: int = RUNS) -> tuple[float, float]:
    """Best (smallest) seconds of each side over `runs` interleaved rounds.

    Each callable does its own setup and returns the seconds of the measured part only.
    Interleaving keeps slow drift (page cache, CPU frequency, a noisy neighbour) from
    favouring whichever side would otherwise run first.
    """
    best_ours = best_bare = float("inf")
    for _ in range(runs):
        best_ours = min(best_ours, ours())
        best_bare = min(best_bare, bare())
    return best_ours, best_bare


def emit(metric: str, value: float, unit: str, baseline: float) -> None:
    """Print one figure as a JSON line."""
    line = {
        "metric": metric,
        "value": round(value, 1),
        "unit": unit,
        "baseline": round(baseline, 1),
        "ratio": round(value / baseline, 3) if baseline else None,
    }
    print(json.dumps(line), flush=True)


def emit_throughput(metric: str, count: int, seconds: float, baseline_seconds: float, unit: str = "records/s") -> None:
    """A throughput figure; the metric name says that higher is better."""
    emit(f"{metric} [{unit}, higher is better]", count / seconds, unit, count / baseline_seconds)


def note(text: str) -> None:
    """Progress and context for the person running the script (stderr keeps stdout pure JSON)."""
    print(text, file=sys.stderr, flush=True)
