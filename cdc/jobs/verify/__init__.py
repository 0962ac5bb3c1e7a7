"""`cdc verify job.yaml`: the source tables against their sink tables, by key and row checksum."""

from cdc.jobs.verify.compare import Difference, TableResult
from cdc.jobs.verify.job import Verifier, verify_job

__all__ = ["Difference", "TableResult", "Verifier", "verify_job"]
