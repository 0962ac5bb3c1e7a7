"""A larger young-generation GC threshold for task threads.

The runtime owns the process, so it (not a plugin) sets this when a task starts. Every
change event allocates about a dozen container objects (structs, their value lists, the
record, its headers) that die within one poll. With CPython's default gen0 threshold (700)
the collector visits most of them, and promotes those still buffered, several times before
they die: about a third of the connector's own per-row CPU on a streaming benchmark. A gen0
threshold of 50,000 lets them die unvisited. The setting is process-wide; it is only ever
raised, never lowered, and holds cyclic garbage a little longer at most.
"""

from __future__ import annotations

import gc
import logging

log = logging.getLogger(__name__)

YOUNG_THRESHOLD = 50_000


def raise_young_threshold(minimum: int = YOUNG_THRESHOLD) -> None:
    gen0, gen1, gen2 = gc.get_threshold()
    if 0 < gen0 < minimum:
        gc.set_threshold(minimum, gen1, gen2)
        log.debug("GC gen0 threshold raised from %d to %d for record churn", gen0, minimum)
