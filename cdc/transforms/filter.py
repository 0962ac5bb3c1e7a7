"""Filter: drop records. Useful only behind a predicate (`transforms.x.predicate`)."""

from __future__ import annotations

from cdc.api.config import ConfigDef
from cdc.api.transforms import Transformation
from cdc.transforms._util import R

CONFIG_DEF = ConfigDef()


class Filter(Transformation[R]):
    """Drops every record it sees; pair it with a predicate (and `negate`) to choose which."""

    def apply(self, record: R) -> R | None:
        return None

    def config(self) -> ConfigDef:
        return CONFIG_DEF
