"""Which server id a binlog reader registers with: the task's own one, and the throwaway ones of checks.

A MySQL/MariaDB server keeps one binlog dump per server id: when a second reader connects with an
id already in use, the server ends the older connection ("A slave with the same server_uuid/server_id",
error 4052 on MariaDB, 1236 on MySQL). So every reader needs an id that no replica and no other
reader of the server uses, and a reader must keep its id across restarts (a new id each start would
leave nothing to detect a second copy of the same connector by).

The task's id (`resolve`):
- `database.server.id`, when the config gives it, always wins (as in Debezium, where it is required);
- else the id stored in the connector's offsets (`reader_server_id`, cdc's key), so a restart, or
  `cdc run` of the same job again, registers as the same reader;
- else, at the first start, an id drawn from `CHOSEN_SERVER_IDS` that the server itself and the
  replicas it lists do not use (`MySqlConnection.choose_server_id`). It is stored with every offset
  from then on (`stamp`). Every offset carries the id the reader used, given or chosen, so removing
  `database.server.id` from a config later keeps the same id.

The ranges: a chosen id comes from [2^30, 7/8 * 2^32), a throwaway one (a `cdc validate` or
`cdc status` probe's short dump, `MySqlConnection.throwaway_server_id`) from the top eighth. Both lie
far above the ids people give by hand (replicas numbered 1, 2, 3...; Debezium's examples 5400,
184054; Debezium 1.x's random default 5400-6400), the two never meet (a probe cannot disconnect a
task whose id was chosen), and each is wide (2.7 billion and 537 million ids), so two connectors
that choose without seeing each other (one still snapshotting, not yet registered with the server)
pick the same id with odds of about one in 2.7 billion.

Debezium's MySQL offsets have a `server_id` key too, but it is another thing: the server id of the
binlog event the offset points after (the server that wrote the change), which this connector
writes as Debezium does (offset_context.py). Hence the separate key.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cdc.api import ConnectException, SourceRecord

log = logging.getLogger(__name__)

SERVER_ID_MAX = 2**32 - 1
# A check's throwaway dump: the top eighth of the 32-bit range.
THROWAWAY_SERVER_IDS = (3_758_096_384, SERVER_ID_MAX)
# A task's own id when database.server.id is omitted: from 2^30 to just below the throwaway range.
CHOSEN_SERVER_IDS = (1_073_741_824, THROWAWAY_SERVER_IDS[0] - 1)
# cdc's offset key: the server id the connector's binlog reader registered with (not Debezium's `server_id`).
OFFSET_KEY = "reader_server_id"
# Draws before giving up: each one is refused only by an id in use, of which a server has a handful.
_DRAWS = 64

# Where the task's id came from.
FROM_CONFIG, FROM_OFFSET, CHOSEN = "config", "offset", "chosen"


@dataclass(frozen=True)
class ServerIdChoice:
    """The id the task's binlog reader registers with, and where it came from (FROM_CONFIG, FROM_OFFSET, CHOSEN)."""

    server_id: int
    origin: str

    def described(self) -> str:
        """How an error names the id: the key when the config gives it, else where the connector got it."""
        if self.origin == FROM_CONFIG:
            return f"database.server.id={self.server_id}"
        return (
            f"server id {self.server_id} (chosen by the connector at its first start, as database.server.id is "
            f"not set, and kept in its offsets as {OFFSET_KEY})"
        )


def stored_server_id(offset: Mapping[str, Any] | None) -> int | None:
    """The reader's id stored in `offset`; None for an offset without one (Debezium's, an older cdc's)
    or with a value that is no server id (an edited offset: a warning, and the connector chooses anew)."""
    if not offset or offset.get(OFFSET_KEY) is None:
        return None
    value = offset[OFFSET_KEY]
    try:
        server_id = int(value)
    except (TypeError, ValueError):
        server_id = 0
    if isinstance(value, bool) or not 1 <= server_id <= SERVER_ID_MAX:
        log.warning(
            "The stored offset's %s=%r is not a server id (1 to %d): ignored, the connector chooses another",
            OFFSET_KEY, value, SERVER_ID_MAX,
        )  # fmt: skip
        return None
    return server_id


def resolve(given: int | None, stored: int | None, choose: Callable[[], int]) -> ServerIdChoice:
    """The task's id: the config's, else the stored one, else `choose()` (called only then).

    A stored id that differs from the given one is logged once (at INFO). While an id is given the
    offsets hold none (the config says it), so their keys stay Debezium's plus cdc's lineage."""
    if given is not None:
        if stored is not None and stored != given:
            log.info(
                "database.server.id=%d is used; the stored offset names %d, the id the connector read the binlog "
                "with before (the offsets keep no id of their own while one is given)",
                given, stored,
            )  # fmt: skip
        return ServerIdChoice(given, FROM_CONFIG)
    if stored is not None:
        log.info("database.server.id is not set: using server id %d, stored in the connector's offsets", stored)
        return ServerIdChoice(stored, FROM_OFFSET)
    chosen = choose()
    log.info(
        "database.server.id is not set: the connector chose server id %d, which no replica of the server uses, "
        "and keeps it in its offsets (%s); set database.server.id to use another",
        chosen, OFFSET_KEY,
    )  # fmt: skip
    return ServerIdChoice(chosen, CHOSEN)


def draw_unused(bounds: tuple[int, int], taken: Callable[[int], bool], rng: random.Random | None = None) -> int:
    """A random id within `bounds` (inclusive) for which `taken` is false.

    Random rather than the lowest free id: connectors that cannot see each other's ids (a
    reader registers with the server only once it streams) would all pick the same lowest one."""
    draw = rng if rng is not None else random.SystemRandom()
    low, high = bounds
    for _ in range(_DRAWS):
        candidate = draw.randint(low, high)
        if not taken(candidate):
            return candidate
    raise ConnectException(
        f"No unused server id found in {_DRAWS} random draws between {low} and {high}: set database.server.id "
        "to an id no replica of the server uses"
    )


def reader_host(topic_prefix: str) -> str:
    """The host name the connector's binlog reader reports to the server (SHOW SLAVE HOSTS' Host): a
    listed replica with this name and the connector's id is the connector itself, running."""
    return f"cdc-{topic_prefix}"


def stamp(records: Sequence[SourceRecord], server_id: int) -> None:
    """Writes the reader's id into each record's offset, so the stored offset keeps it (OFFSET_KEY)."""
    for record in records:
        offset = record.source_offset
        if isinstance(offset, dict):
            offset[OFFSET_KEY] = server_id


# The message of both servers' "A slave with the same server_uuid/server_id" errors (MySQL 8.4 says
# "replica"); the code alone is not enough on MySQL, whose 1236 also means a purged binlog.
_SAME_ID_TEXT = "same server_uuid/server_id"
ER_SLAVE_SAME_ID = 4052  # MariaDB's code; MySQL sends ER_MASTER_FATAL_ERROR_READING_BINLOG (1236)


def is_same_id_clash(code: object, message: str) -> bool:
    """The server ended this binlog connection because another reader connected with its server id."""
    return code == ER_SLAVE_SAME_ID or (code == 1236 and _SAME_ID_TEXT in message.lower())


def same_id_advice(choice: ServerIdChoice, code: object, message: str) -> str:
    """One line: who disconnected the reader, and the fix."""
    first = message.split(";", 1)[0].strip()
    if choice.origin == FROM_CONFIG:
        fix = "set database.server.id to an id no other replica uses, or omit it to let the connector choose one"
    else:  # the connector's own choice: the likely other reader is a second copy of this connector
        fix = (
            "stop the other reader (a second copy of this connector, running with the same offsets, has the same "
            "id), or set database.server.id to an id no other replica uses"
        )
    return (
        f"The server disconnected the binlog reader: another replica or binlog reader connected with the same "
        f"{choice.described()} (MySQL error {code}: {first}); {fix}"
    )
