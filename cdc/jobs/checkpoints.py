"""The Spark checkpoint of a job's sink query: where it lives, and the log offsets its last committed
batch covers (Spark writes a commit only after the batch is in the target). Below `run`, `status`
and `verify`, which all read it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from cdc.jobs.spec import JobSpec
from cdc.log.base import TopicPartition
from cdc.log.private_files import make_private_dir


def checkpoint_dir(job: JobSpec) -> str:
    """The Spark checkpoint of the job's sink query (`spark.checkpoint`, else under state.dir)."""
    given = (job.spark or {}).get("checkpoint")
    return os.path.abspath(given or os.path.join(job.worker_config()["state.dir"], "spark-checkpoints", job.name))


def make_private_checkpoint_dir(job: JobSpec) -> None:
    """The job's Spark checkpoint 0700, like state.dir, when it lies in state.dir (issue 17)."""
    checkpoint = Path(checkpoint_dir(job))
    if Path(os.path.abspath(job.worker_config()["state.dir"])) in checkpoint.parents:
        make_private_dir(checkpoint)


def committed_offsets(checkpoint: str | Path) -> tuple[int | None, dict[TopicPartition, int]]:
    """The last committed batch id and its end offsets (`{topic: {partition: next offset}}`)."""
    root = Path(checkpoint)
    commits = [int(p.name) for p in (root / "commits").glob("[0-9]*") if p.name.isdigit()]
    if not commits:
        return None, {}
    batch = max(commits)
    lines = (root / "offsets" / str(batch)).read_text().splitlines()
    # Spark's offset log: "v1", the batch metadata, then one JSON line per source.
    out: dict[TopicPartition, int] = {}
    for line in lines[2:]:
        data = json.loads(line) if line.strip() not in ("", "-") else {}
        for topic, parts in (data or {}).items():
            for p, o in parts.items():
                out[TopicPartition(topic, int(p))] = int(o)
    return batch, out
