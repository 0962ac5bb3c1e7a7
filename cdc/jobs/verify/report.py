"""Rendering results: one line per table, then sample differences and notes (or JSON)."""

from __future__ import annotations

from typing import Any

from cdc.jobs.verify.compare import Difference, TableResult

_WIDTH = 80


def _value(v: str | None) -> str:
    if v is None:
        return "NULL"
    text = v if len(v) <= _WIDTH else v[: _WIDTH - 1] + "…"
    return repr(text) if text == "" or text != text.strip() else text


def _key(d: Difference) -> str:
    return ", ".join(f"{k}={_value(v)}" for k, v in d.key.items())


def summary(r: TableResult) -> str:
    head = f"{r.source} → {r.target}"
    if r.skipped:
        return f"{head}: not compared: {r.skipped}"
    counts = f"{r.source_rows} source rows, {r.target_rows} target rows, {r.differences} differences"
    parts = [
        f"{n} {label}"
        for n, label in (
            (r.missing, "missing in the target"),
            (r.extra, "extra in the target"),
            (r.changed, "changed"),
            (r.duplicates, "duplicate keys in the target"),
        )
        if n
    ]
    return f"{head}: {counts}" + (f" ({', '.join(parts)})" if parts else "")


def sample(d: Difference) -> str:
    if d.kind == "missing":
        return f"missing in the target: {_key(d)}"
    if d.kind == "extra":
        return f"extra in the target: {_key(d)}"
    if d.kind == "duplicate":
        return f"key more than once in the target: {_key(d)}"
    cols = "; ".join(f"{c}: source {_value(s)}, target {_value(t)}" for c, s, t in d.columns)
    return f"changed: {_key(d)}: {cols or 'values differ (the row changed again while verifying?)'}"


def text_lines(results: list[TableResult], passed: list[str]) -> list[str]:
    lines: list[str] = []
    for r in results:
        lines.append(summary(r))
        lines.extend("  " + sample(d) for d in r.samples)
        shown = len(r.samples)
        if r.differences > shown:
            lines.append(f"  … and {r.differences - shown} more (--max-diffs to see more)")
        lines.extend(f"  note: {n}" for n in r.notes)
    if passed:
        lines.append(f"not checked (no target table): {', '.join(passed)}")
    total = sum(r.differences for r in results)
    skipped = sum(1 for r in results if r.skipped)
    tail = f", {skipped} not compared" if skipped else ""
    lines.append(f"{len(results)} tables verified{tail}: {total} differences")
    return lines


def as_json(results: list[TableResult], passed: list[str]) -> dict[str, Any]:
    return {
        "tables": [r.to_json() for r in results],
        "not_checked": passed,
        "differences": sum(r.differences for r in results),
    }
