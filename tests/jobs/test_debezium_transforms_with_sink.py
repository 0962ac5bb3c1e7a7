"""Debezium's SMTs in a job against what the Spark sink needs (issue 23): the validator that refuses SMTs
which would make the sink lose deletes knows ExtractNewRecordState's delete handling, the outbox
EventRouter and Debezium's scripted Filter."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdc.jobs.load import validate_job_text
from tests.jobs.test_transforms_with_sink import BASE


@pytest.fixture(autouse=True)
def _cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def check(transforms: str) -> tuple[list[str], list[str]]:
    _job, problems = validate_job_text(BASE.format(transforms=transforms), check_connectivity=False)
    errors = [p.render("job.yaml") for p in problems if not p.warning]
    warnings = [p.render("job.yaml") for p in problems if p.warning]
    return errors, warnings


@pytest.mark.parametrize(
    ("keys", "where"),
    [
        ("'delete.tombstone.handling.mode': drop", "delete.tombstone.handling.mode"),
        ("'delete.handling.mode': drop", "delete.handling.mode"),
        ("'drop.tombstones': 'false'", "drop.tombstones"),  # the legacy delete.handling.mode defaults to drop
    ],
)
def test_unwrap_dropping_deletes_is_refused_naming_the_key(keys: str, where: str) -> None:
    errors, _ = check(f"  - {{name: unwrap, type: io.debezium.transforms.ExtractNewRecordState, {keys}}}")
    deletes = [e for e in errors if "drops delete events" in e]
    assert len(deletes) == 1, errors
    assert f"transforms[0]['{where}']" in deletes[0] or f"transforms[0].{where}" in deletes[0]
    assert "delete.tombstone.handling.mode=rewrite" in deletes[0] and "'unwrap'" in deletes[0]


@pytest.mark.parametrize(
    "keys",
    [
        "'delete.tombstone.handling.mode': rewrite",
        "'delete.handling.mode': rewrite",
        "'drop.tombstones': 'false', 'delete.handling.mode': rewrite",
    ],
)
def test_unwrap_with_rewritten_deletes_and_positions_is_accepted(keys: str) -> None:
    """The sink applies unwrapped rows that carry op and the source position (tests/jobs/test_unwrap_validation.py)."""
    errors, _ = check(
        "  - {name: unwrap, type: io.debezium.transforms.ExtractNewRecordState, "
        f"'add.fields': 'op,source.file,source.pos,source.row,source.sequence,source.snapshot', {keys}}}"
    )
    assert errors == []


def test_outbox_router_reshapes_the_event() -> None:
    errors, _ = check("  - {name: outbox, type: io.debezium.transforms.outbox.EventRouter}")
    assert any("'outbox' (EventRouter) reshapes" in e for e in errors), errors


def test_debezium_filter_warns_about_dropped_changes_not_a_missing_predicate() -> None:
    errors, warnings = check(
        "  - {name: f, type: io.debezium.transforms.Filter, language: cdc.expr, condition: \"value.op != 'd'\"}"
    )
    assert errors == [], errors
    assert len(warnings) == 1 and "condition is false" in warnings[0] and "deletes" in warnings[0]


def test_debezium_filter_with_a_groovy_script_is_refused() -> None:
    errors, _ = check(
        "  - {name: f, type: io.debezium.transforms.Filter, language: jsr223.groovy, condition: \"value.op != 'd'\"}"
    )
    assert len(errors) == 1 and "cdc.expr" in errors[0] and "language" in errors[0]
