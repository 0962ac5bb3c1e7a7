"""The job file the MySQL → Delta job tests write: one owner for its layout."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def mysql_delta_job(tmp_path: Path, name: str, props: Mapping[str, str], tables: Mapping[str, str]) -> Path:
    """`tmp_path/job.yaml`: source `props` (connector_props), embedded transport in
    `tmp_path/state`, Delta sink in `tmp_path/lake`; `tables`: `<db>.<table>` → its YAML settings."""
    source = "\n".join(f"  {k}: '{v}'" for k, v in props.items())
    listed = "\n".join(f"    {table}: {{{settings}}}" for table, settings in tables.items())
    job = tmp_path / "job.yaml"
    job.write_text(
        f"""name: {name}
source:
{source}
transport:
  type: embedded
  state.dir: {tmp_path / "state"}
sink:
  type: delta
  path: {tmp_path / "lake"}
  tables:
{listed}
spark:
  master: local[2]
"""
    )
    return job
