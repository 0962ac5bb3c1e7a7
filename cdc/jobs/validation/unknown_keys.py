"""Keys the connector or an SMT does not define: an error when a near miss of a known key
(the job would silently run with the default), else a warning, as Kafka Connect logs
"supplied but isn't a known config" and passes the key on."""

from __future__ import annotations

from typing import Any

from cdc.jobs.validation.problems import Collector


def report_unknown_keys(job: dict[str, Any], unknown: dict[str, Any], cls_name: str, out: Collector) -> None:
    """`unknown` maps a connector-config key to ConnectorValidator's unknown-key finding."""
    for key in job["source"]:
        u = unknown.get(key)
        if u is None:
            continue
        if u.suggestion:
            out.add(("source", key), f"unknown key {key!r}; did you mean {u.suggestion!r}?")
        else:
            out.warn(
                ("source", key),
                f"unknown key {key!r}: connector {cls_name!r} does not define it, so it is passed on and likely "
                "ignored; check the spelling, or remove it",
            )
    _report_unknown_transform_keys(job, unknown, out)


def _report_unknown_transform_keys(job: dict[str, Any], unknown: dict[str, Any], out: Collector) -> None:
    """A transform's (or its predicate's) setting its SMT does not define: an error when it is a near
    miss of one it does (`regx` for `regex`), else a warning; JobSpec names them
    `transforms.<name>.<key>` and `predicates.<name>-predicate.<key>`."""
    for i, t in enumerate(job.get("transforms") or []):
        predicate = t.get("predicate") or {}
        where = (
            (f"transforms.{t.get('name')}.", ("transforms", i), t.get("type")),
            (f"predicates.{t.get('name')}-predicate.", ("transforms", i, "predicate"), predicate.get("type")),
        )
        for prefix, path, kind in where:
            for name, u in unknown.items():
                if not name.startswith(prefix):
                    continue
                key = name[len(prefix) :]
                if u.suggestion and u.suggestion.startswith(prefix):
                    out.add((*path, key), f"unknown key {key!r}; did you mean {u.suggestion[len(prefix) :]!r}?")
                else:
                    out.warn(
                        (*path, key),
                        f"unknown key {key!r}: {kind} does not define it, so it is ignored; check the "
                        "spelling, or remove it",
                    )
