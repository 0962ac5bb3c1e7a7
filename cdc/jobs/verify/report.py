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
    line = f"{head}: {counts}" + (f" ({', '.join(parts)})" if parts else "")
    if r.sampled is not None:
        line += f"; a sample of {r.sampled} keys"
    if r.changed_since:
        line += f"; {r.changed_since} keys changed since the snapshot, not compared"
    return line


def online_line(position: str, waited_s: float) -> str:
    """The online verify's first line: where the source was read, and that the lake had applied it."""
    return (
        f"online: source read in one snapshot at {position}; the lake had applied every change up to it "
        f"after {waited_s:.1f} s; keys changed after it are not compared"
    )


def sample_line(n: int, seed: int) -> str:
    return f"sample: {n} random keys per table, seed {seed} (--seed {seed} draws the same keys again)"


def key_range_lines(given: Any, applied: list[str], skipped: dict[str, str]) -> list[str]:
    """`--key-range`: the range, the tables it was applied to, and each table not compared and why."""
    tables = ", ".join(applied)
    lines = [f"key range: {given.describe()} (--key-range {given.text}) on {len(applied)} table(s): {tables}"]
    lines.extend(f"  not compared: {table}: {why}" for table, why in skipped.items())
    return lines


def key_range_json(given: Any, applied: list[str], skipped: dict[str, str]) -> dict[str, Any]:
    return given.to_json() | {
        "tables": applied,
        "skipped": [{"table": table, "reason": why} for table, why in skipped.items()],
    }


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


# -- cdc verify --repair ---------------------------------------------------------------------------
EXTRA_ADVICE = (
    "no source row to read: an incremental snapshot emits nothing for a key that does not exist, so no signal "
    "heals it. The target row is stale (a delete the sink never applied, or a row written to the target by "
    "something else): delete it from the target by its key, or rebuild the table from a new initial snapshot"
)


def _counts(r: TableResult) -> str:
    parts = [
        f"{n} {label}"
        for n, label in (
            (r.missing, "missing"),
            (r.extra, "extra"),
            (r.changed, "changed"),
            (r.duplicates, "duplicate"),
        )
        if n
    ]
    return f"{r.differences} differences" + (f" ({', '.join(parts)})" if parts else "")


def _keys_text(keys: list[str], names: list[str], limit: int) -> str:
    from cdc.jobs.verify.compare import _key_text

    shown = "; ".join(_key_text(names, k) for k in keys[:limit])
    return shown + (f"; … and {len(keys) - limit} more" if len(keys) > limit else "")


def plan_lines(plans: list[Any], names: dict[str, list[str]], max_diffs: int) -> list[str]:
    """What `--repair` will do per table: the keys to read again, in how many signals, and what it cannot heal."""
    lines: list[str] = []
    for p in plans:
        head = f"repair {p.table}: {len(p.keys)} keys to read again in {len(p.conditions)} signal(s)"
        if not p.keys:
            head = f"repair {p.table}: nothing a snapshot can read again"
        lines.append(head)
        if p.extra:
            lines.append(f"  {len(p.extra)} extra in the target, not repairable by a snapshot: {EXTRA_ADVICE}")
            lines.append(f"    {_keys_text(p.extra, names[p.table], max(1, max_diffs))}")
        if p.gone:
            lines.append(f"  {len(p.gone)} no longer in the source (deleted since they were compared)")
        if p.unselectable:
            lines.append(f"  {len(p.unselectable)} not signalled: {p.why_unselectable}")
            lines.append(f"    {_keys_text(p.unselectable, names[p.table], max(1, max_diffs))}")
    return lines


def outcome_lines(plans: list[Any], outcome: Any, job_file: str) -> list[str]:
    lines: list[str] = []
    if not outcome.running:
        sent = sum(outcome.sent.values())
        total = sum(outcome.total.values())
        if sent:
            lines.append(
                f"repair: the job is not running: sent {sent} of {total} signal(s) to the {outcome.channel} channel; "
                f"the rows are read again when the job runs next (`cdc run {job_file} --until-caught-up` waits for "
                f"the incremental snapshot), then run `cdc verify {job_file} --repair` again"
                + (" to send the rest and check" if total > sent else " to check")
            )
        for table in outcome.held:
            lines.append(
                f"repair {table}: not signalled: an incremental snapshot of it is still queued in the job's offsets "
                "(a second one would be dropped); run the job, then repair again"
            )
        return lines
    for p in plans:
        after = outcome.after.get(p.table)
        sent = f"{outcome.sent.get(p.table, 0)}/{outcome.total.get(p.table, 0)} signals"
        if after is None:
            lines.append(f"repair {p.table}: before {_counts(p.before)}; {sent}; not verified again")
            continue
        lines.append(f"repair {p.table}: before {_counts(p.before)}; {sent}; after, on those keys: {_counts(after)}")
    if outcome.timed_out:
        lines.append(
            "repair: the wait timed out (--repair-timeout) before every snapshot was read and applied; the "
            "verification above is of that moment: the job goes on repairing, run `cdc verify --repair` again later"
        )
    left = sum(r.differences for r in outcome.after.values())
    lines.append(f"repair: {left} differences left on the keys that differed")
    return lines


def repair_json(plans: list[Any], outcome: Any, max_diffs: int) -> dict[str, Any]:
    return {
        "running": outcome.running,
        "channel": outcome.channel,
        "completed": outcome.completed,
        "timed_out": outcome.timed_out,
        "tables": [
            {
                "source": p.table,
                "keys": len(p.keys),
                "signals": len(p.conditions),
                "sent": outcome.sent.get(p.table, 0),
                "held": p.table in outcome.held,
                "extra": len(p.extra),
                "extra_sample": p.extra[: max(1, max_diffs)],
                "gone": len(p.gone),
                "unselectable": len(p.unselectable),
                "unselectable_why": p.why_unselectable,
                "before": p.before.to_json() | {"samples": []},
                "after": outcome.after[p.table].to_json() if p.table in outcome.after else None,
            }
            for p in plans
        ],
        "differences_after": sum(r.differences for r in outcome.after.values()) if outcome.after else None,
    }
