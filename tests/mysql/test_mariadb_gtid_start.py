"""Does a MariaDB server hold the stored GTID position, as the server itself judges a GTID start
(cdc_mysql/gtid.py `mariadb_missing`)? Found by tests/jobs/test_failover_live.py: after a failover
to a replica that missed transactions the connector had read (`0-1-N`), the promoted replica's
`@@gtid_binlog_pos` passes N as soon as it has taken more writes than it missed (`0-2-M`, M > N).
The per-domain check took that for a held position, the restart resumed by GTID, the server refused
(error 1236) and the advice, snapshot.mode=when_needed, could not help: it was already set."""

from __future__ import annotations

import pytest

from cdc_mysql.gtid import contains, mariadb_missing


@pytest.mark.parametrize(
    ("binlog_state", "slave_pos", "stored", "missing"),
    [
        # the same server, or a replica that got everything (log_slave_updates): held
        ("0-1-10", "", "0-1-10", None),
        ("0-1-12", "", "0-1-10", None),
        ("0-1-10,0-2-15", "0-1-10", "0-1-10", None),
        ("0-1-10,0-2-15", "", "0-2-15", None),
        # a promoted replica that stopped at 0-1-7 and took writes of its own past 10: missing
        ("0-1-7,0-2-15", "0-1-7", "0-1-10", "0-1-10"),
        ("0-1-7", "0-1-7", "0-1-10", "0-1-10"),
        # no transaction of server 1 in its binlog at all (another history): missing
        ("0-2-15", "", "0-1-10", "0-1-10"),
        # a promoted replica without log_slave_updates: the stored GTID is its own replication position
        ("0-2-15", "0-1-10", "0-1-10", None),
        # several domains: each is judged; the first missing one is named
        ("0-1-10,1-3-4", "", "0-1-10,1-3-5", "1-3-5"),
        ("0-1-10,1-3-5,1-4-9", "", "0-1-10,1-3-5", None),
        # nothing stored, or a server that does not say: no verdict
        ("0-1-10", "", "", None),
        ("", "", "0-1-10", None),
    ],
)
def test_a_gtid_start_needs_the_stored_servers_own_sequence_number(
    binlog_state: str, slave_pos: str, stored: str, missing: str | None
) -> None:
    assert mariadb_missing(binlog_state, slave_pos, stored) == missing


def test_the_last_gtid_per_domain_alone_takes_a_lossy_failover_for_a_held_position() -> None:
    """Why the per-domain `contains` is not enough on its own (it stays the first check)."""
    assert contains("0-2-15", "0-1-10", is_mariadb=True)
    assert mariadb_missing("0-1-7,0-2-15", "0-1-7", "0-1-10") == "0-1-10"
