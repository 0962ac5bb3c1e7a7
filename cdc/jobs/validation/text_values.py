"""Characters no job setting can hold: a NUL anywhere, a control character in a key or a path.

YAML refuses raw control characters, but its double-quoted escapes (`"\\0"`, `"\\x07"`) write
them into a value. A NUL cannot be part of a file name, a host name or a libpq/librdkafka
setting (each is a C string there), so such a job passed `cdc validate` and then `cdc run`
died with a traceback ("embedded null byte"). A control character in a path makes a
directory nobody can type. Checked before any other check reads the values (the references'
`${file:…}` paths included), each problem naming its YAML path; the value is never quoted
(it may be a secret).
"""

from __future__ import annotations

import re
from typing import Any

from cdc.jobs.validation.problems import Collector

# Keys whose value is a file or directory: state.dir, sink.path, errors.deadletter.table, every
# `*.location`/`*.file`/`*.filename`/`*.dir`/`*.path`, and libpq's certificate files.
_PATH_KEY = re.compile(
    r"(^|\.)(state\.dir|path|dir|file|filename|location|table|sslrootcert|sslcert|sslkey|sslcrl|sslcrldir)$"
)
# C0 controls and DEL, and the C1 controls; tab, newline and carriage return are ordinary text.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def _name(char: str) -> str:
    return "a NUL character (\\0)" if char == "\0" else f"a control character (\\x{ord(char):02x})"


def check_text_values(data: Any, out: Collector) -> None:
    """One problem per key or value holding a NUL (anywhere) or a control character (in a key,
    or in the value of a path key), at its YAML path."""
    # Iterative: the composed document is bounded (yaml_text's limits), but not shallow enough to trust recursion.
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(data, ())]
    while stack:
        value, path = stack.pop()
        if isinstance(value, dict):
            for k, v in value.items():
                key = str(k)
                if m := _CONTROL.search(key):
                    out.add(
                        (*path, key),
                        f"the key holds {_name(m.group())}; retype the key (a \\ escape in a double-quoted "
                        "YAML string writes one)",
                    )
                    continue
                stack.append((v, (*path, key)))
        elif isinstance(value, list):
            stack.extend((v, (*path, i)) for i, v in enumerate(value))
        elif isinstance(value, str):
            key = next((p for p in reversed(path) if isinstance(p, str)), "")
            m = _CONTROL.search(value) if _PATH_KEY.search(key) else re.search("\0", value)
            if m:
                what = "a path" if _PATH_KEY.search(key) else "a setting"
                out.add(
                    path,
                    f"the value holds {_name(m.group())}, which {what} cannot contain; remove it (a \\ escape "
                    "in a double-quoted YAML string writes one)",
                )
