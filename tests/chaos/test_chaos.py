"""Short seeded chaos runs, one per variant: `cdc run` SIGKILLed three times (the first during
the initial snapshot, with snapshotted rows deleted before the restart; one inside a Spark
micro-batch or at a random moment), the source database killed with -9 and restarted where
the variant says so, a writer changing the source throughout; then one `--until-caught-up`
run, and the target must equal the source row by row, with `cdc verify` agreeing. One more
case runs mariadb-delta over the Kafka transport, and one mariadb-iceberg (the Iceberg target in a
SQLite SQL catalog, applied by Spark's tasks as Delta is) (a Tansu broker spawned for it: offsets stored
every second or five, so kills replay changes the sink must absorb).

The seed is CDC_CHAOS_SEED if set, else a fixed default; every failure message names it.
The long form (12 kills, a 20k-row transaction) is `benchmarks/chaos.py`; the harness and
what the seed does and does not fix are described in tests/chaos/harness.py.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.chaos.harness import Chaos, ChaosConfig

pytestmark = pytest.mark.slow  # a minute or more each: `pytest -m 'not slow'` for a quick local run

DEFAULT_SEED = 16
SHORT_SIZES = {"accounts": 2000, "order_lines": 3000, "tags": 1500}


@pytest.mark.parametrize(
    ("variant", "db_kill", "transport"),
    [
        pytest.param("mariadb-delta", True, "embedded", id="mariadb-delta-True"),
        pytest.param("mariadb-postgres", False, "embedded", id="mariadb-postgres-False"),
        pytest.param("postgres-delta", True, "embedded", id="postgres-delta-True"),
        pytest.param("mariadb-delta", True, "kafka", id="mariadb-delta-True-kafka"),
        pytest.param("mariadb-iceberg", True, "embedded", id="mariadb-iceberg-True"),
    ],
)
def test_chaos_short_run(variant: str, db_kill: bool, transport: str, tmp_path: Path) -> None:
    seed = int(os.environ.get("CDC_CHAOS_SEED", DEFAULT_SEED))
    config = ChaosConfig(variant, seed, kills=3, db_kill=db_kill, sizes=SHORT_SIZES, big_rows=3000, pace=0.1,
                         transport=transport)  # fmt: skip
    result = Chaos(config, tmp_path).run()
    if not result.ok:
        report = "\n".join(result.report())
        pytest.fail(
            f"chaos {variant} over {transport} failed with seed {seed} (CDC_CHAOS_SEED={seed} replays it):\n{report}",
            False,
        )
    for big in ("state", "lake"):  # hundreds of MB; kept above, for a failure's post-mortem
        shutil.rmtree(tmp_path / big, ignore_errors=True)
