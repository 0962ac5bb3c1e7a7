"""The job key `verify` (scheduled online verify in `cdc run`, issue 37): its validation, the outcome line
`cdc status` and the log show, and the metrics it exports."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from cdc.jobs.load import validate_job_text
from cdc.jobs.verify.periodic import VerifyCollector, VerifyFigures, VerifyOutcome, VerifySchedule

pytestmark = pytest.mark.unit

JOB = """name: shop
source: {connector.class: mysql, database.hostname: db, database.user: u, topic.prefix: shop}
transport: {type: embedded, state.dir: /tmp/nowhere}
sink: {type: delta, path: /tmp/lake}
"""


def _problems(verify: str) -> list[str]:
    _job, problems = validate_job_text(JOB + verify, "job.yaml", check_connectivity=False)
    return [p.render("job.yaml") for p in problems if not p.warning]


def test_a_schedule_loads_with_its_defaults() -> None:
    job, problems = validate_job_text(JOB + "verify: {interval.seconds: 3600}\n", "job.yaml", check_connectivity=False)
    assert job is not None and not [p for p in problems if not p.warning]
    assert VerifySchedule.of(job) == VerifySchedule(3600, None, (), 20, 600)
    job, _ = validate_job_text(
        JOB + "verify: {interval.seconds: 60, sample: 500, tables: [shop.items], max.diffs: 5}\n",
        "job.yaml",
        check_connectivity=False,
    )
    assert job is not None and VerifySchedule.of(job) == VerifySchedule(60, 500, ("shop.items",), 5, 600)
    job, _ = validate_job_text(JOB, "job.yaml", check_connectivity=False)
    assert job is not None and VerifySchedule.of(job) is None


@pytest.mark.parametrize(
    ("verify", "expected"),
    [
        ("verify: {interval.seconds: 0}\n", "use a whole number of seconds, 1 or more"),
        ("verify: {interval.seconds: 1h}\n", "expected integer"),
        ("verify: {sample: 10}\n", "interval.seconds"),
        ("verify: {interval.seconds: 60, intervall: 5}\n", "intervall"),
        ("verify: {interval.seconds: 60, sample: 0}\n", "use a whole number of keys"),
    ],
)
def test_a_wrong_schedule_is_one_line_at_its_key(verify: str, expected: str) -> None:
    problems = _problems(verify)
    assert len(problems) == 1 and "verify" in problems[0] and expected in problems[0], problems


def _outcome(**tables: dict[str, int]) -> VerifyOutcome:
    return VerifyOutcome(1_796_400_000_000, 1_796_400_001_000, "mysql-bin.000002:385", dict(tables))


def _counts(missing: int = 0, changed: int = 0, extra: int = 0, duplicates: int = 0) -> dict[str, int]:
    return {
        "differences": missing + changed + extra + duplicates,
        "missing": missing,
        "changed": changed,
        "extra": extra,
        "duplicates": duplicates,
    }


def test_the_outcome_line_names_each_differing_table_and_kind() -> None:
    clean = _outcome(**{"shop.items": _counts(), "shop.orders": _counts()})
    assert clean.describe() == (
        "last run at 2026-12-04 16:00:01 UTC (source read at mysql-bin.000002:385): no differences in 2 tables"
    )
    drift = _outcome(**{"shop.items": _counts(missing=2, changed=1), "shop.orders": _counts()})
    assert drift.describe().endswith(": 3 differences (shop.items: 2 missing, 1 changed); cdc verify shows them")
    failed = VerifyOutcome(1, 1_796_400_001_000, error="cannot connect to db:3306")
    assert failed.describe() == "last run at 2026-12-04 16:00:01 UTC failed: cannot connect to db:3306"
    assert VerifyOutcome.from_json(drift.to_json()) == drift


def test_the_metrics_keep_the_last_completed_run_and_count_failures() -> None:
    figures = VerifyFigures()
    registry = CollectorRegistry()
    registry.register(VerifyCollector(figures))
    text = generate_latest(registry).decode()
    assert "cdc_verify_runs_total 0.0" in text and "cdc_verify_differences" not in text
    figures.record(_outcome(**{"shop.items": _counts(extra=4)}))
    figures.record(VerifyOutcome(1, 2, error="timed out"))
    text = generate_latest(registry).decode()
    assert "cdc_verify_runs_total 2.0" in text and "cdc_verify_failures_total 1.0" in text
    assert 'cdc_verify_differences{table="shop.items"} 4.0' in text
    assert "cdc_verify_last_run_timestamp 1.796400001e+09" in text
