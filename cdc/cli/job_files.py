"""The job layer's reader of job files for the core commands that take one (`cdc topics`,
`cdc offsets`), registered as the `cdc.job_files` entry point (cdc/cli/extras.py)."""

from __future__ import annotations

from dataclasses import dataclass

from cdc.cli.extras import require_extra
from cdc.jobs.load import load_job
from cdc.jobs.spec import JobSpec
from cdc.runtime.state_lock import StateDirLock
from cdc.runtime.worker_config import WorkerConfig

# The job layer imports its libraries where it uses them: without the `jobs` extra, loading
# this entry point stops here with one line saying what to install.
require_extra("jobs")


@dataclass(frozen=True)
class InspectedJob:
    """A job read for inspection: its name, its worker config and its lock."""

    spec: JobSpec

    @property
    def name(self) -> str:
        return self.spec.name

    def worker_config(self) -> dict[str, str]:
        return self.spec.worker_config()

    def lock(self, action: str) -> StateDirLock:
        """The lock of the job's state.dir, acquired (refused while `cdc run` or another writer
        holds it); release it with `with`."""
        return StateDirLock.for_job(WorkerConfig(self.worker_config()).get("state.dir"), self.name).acquire(action)


def open_job_file(path: str) -> InspectedJob:
    """The job at `path`, read as `cdc status` reads it (unresolved ${…} in `source` allowed)."""
    return InspectedJob(load_job(path, inspect_only=True))
