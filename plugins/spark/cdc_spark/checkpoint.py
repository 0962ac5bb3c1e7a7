"""What a killed first run leaves in the sink query's Spark checkpoint, cleared before a restart.

Spark writes each offset-log entry atomically: a hidden temp file (`.0.<uuid>.tmp`, and the
local file system's checksum `..0.<uuid>.tmp.crc`) renamed to `0` when complete. A `kill -9`
between the two leaves only the temp files. On the next start Spark sees no batch in
`offsets/`, so it starts a new query at batch 0, and since Spark 4 it then refuses any
non-empty `offsets/` or `commits/` directory (STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY),
so every later run fails the same way: a routine restart wedges the job.

Removing those leftovers is safe exactly when `offsets/` holds no batch: no batch was ever
planned, so the sink applied nothing and Spark starts from the source's starting offsets
whatever the directory held. Anything else found there (a batch file, a file Spark does
not write) is left alone, so Spark's own check still guards a checkpoint that belongs to
another query. Only local checkpoints are cleared (a path or a `file:` URI); on an object
store Spark's checkpoint manager writes in place, without temp files.
"""

from __future__ import annotations

import logging
from pathlib import Path
from urllib.parse import urlparse

log = logging.getLogger(__name__)

# The checkpoint's directories that Spark requires empty when it starts a query at batch 0.
_LOGS = ("offsets", "commits")


def _local_path(checkpoint: str) -> Path | None:
    parsed = urlparse(checkpoint)
    if parsed.scheme == "file":
        return Path(parsed.path)
    if parsed.scheme and len(parsed.scheme) > 1:  # s3a://, abfss://, hdfs://…; one letter is a Windows drive
        return None
    return Path(checkpoint)


def _is_temp(name: str) -> bool:
    """A write in progress: Spark's hidden temp file or a hidden checksum of one."""
    return name.startswith(".") and (name.endswith(".tmp") or name.endswith(".crc"))


def clear_unplanned_leftovers(checkpoint: str) -> list[Path]:
    """Remove the temp files a killed run left before its first batch was planned; return them.

    Does nothing when `offsets/` holds any batch (the query resumes from it, and Spark ignores
    temp files then) or when the checkpoint is not on the local file system.
    """
    root = _local_path(checkpoint)
    if root is None or not (root / "offsets").is_dir():
        return []
    if any(p.name.isdigit() for p in (root / "offsets").iterdir()):
        return []
    removed: list[Path] = []
    for name in _LOGS:
        folder = root / name
        if not folder.is_dir():
            continue
        for entry in sorted(folder.iterdir()):
            if entry.is_file() and _is_temp(entry.name):
                entry.unlink()
                removed.append(entry)
    if removed:
        log.info(
            "Checkpoint %s: removed %d temp file(s) that a run killed before its first batch left behind",
            root,
            len(removed),
        )
    return removed
