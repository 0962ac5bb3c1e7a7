"""YAML paths for messages: `sink.tables['shop.orders'].mode`, with the line they came from."""

from __future__ import annotations

import re
from collections.abc import Sequence

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def format_path(parts: Sequence[str | int]) -> str:
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        elif _IDENT.match(p):
            out += ("." if out else "") + p
        else:
            out += f"[{p!r}]"
    return out or "(top level)"
