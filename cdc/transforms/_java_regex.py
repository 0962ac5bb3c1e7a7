"""Java regular expressions and `Matcher` replacement strings, run on Python's `re`.

Kafka Connect configs (RegexRouter, TopicNameMatches) are written for java.util.regex, so
the same strings must keep working here. The two dialects agree on almost everything topic
patterns use; the differences handled are named groups `(?<name>...)`, back references
`\\k<name>`, quoting `\\Q...\\E`, the `\\z`/`\\Z` anchors and the POSIX classes
`\\p{Alpha}` etc. (and `\\P{…}` outside brackets). Replacement strings use Java's
`$1` / `${name}` / `\\$` syntax, which differs from Python's `\\1`, so they are parsed here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from cdc.transforms._util import config_error

# java.util.regex's POSIX character classes (US-ASCII only, as Java defines them by default),
# as the contents of a Python character class. Python's re has no \p at all.
_POSIX_CLASSES = {
    "Lower": "a-z",
    "Upper": "A-Z",
    "ASCII": "\\x00-\\x7f",
    "Alpha": "a-zA-Z",
    "Digit": "0-9",
    "Alnum": "a-zA-Z0-9",
    "Punct": "!-/:-@\\[-`{-~",
    "Graph": "!-~",
    "Print": " -~",
    "Blank": " \\t",
    "Cntrl": "\\x00-\\x1f\\x7f",
    "XDigit": "0-9a-fA-F",
    "Space": " \\t\\n\\x0b\\f\\r",
}


def _posix_class(java: str, i: int) -> tuple[str, int] | None:
    """`\\p{Name}` / `\\P{Name}` at `i`: (class contents, index after `}`), if a POSIX class."""
    if not java.startswith("{", i + 2):
        return None
    end = java.find("}", i + 3)
    contents = _POSIX_CLASSES.get(java[i + 3 : end]) if end > 0 else None
    return None if contents is None else (contents, end + 1)


def translate_pattern(java: str) -> str:
    """Rewrite the Java-only constructs of a pattern into Python `re` syntax."""
    out: list[str] = []
    i, n = 0, len(java)
    in_class = False
    while i < n:
        c = java[i]
        if c == "\\" and i + 1 < n:
            nxt = java[i + 1]
            if nxt == "Q":  # \Q...\E quotes everything up to \E (or the end)
                end = java.find("\\E", i + 2)
                literal = java[i + 2 :] if end < 0 else java[i + 2 : end]
                out.append(re.escape(literal))
                i = n if end < 0 else end + 2
                continue
            if nxt in "pP":
                posix = _posix_class(java, i)
                # Inside brackets only \p can be spliced in; \P stays and fails to compile.
                if posix is not None and not (in_class and nxt == "P"):
                    contents, after = posix
                    out.append(contents if in_class else ("[^" if nxt == "P" else "[") + contents + "]")
                    i = after
                    continue
            if not in_class:
                if nxt == "z":
                    out.append(r"\Z")
                    i += 2
                    continue
                if nxt == "Z":  # Java \Z tolerates one final line terminator
                    out.append(r"(?=\n?\Z)")
                    i += 2
                    continue
                if nxt == "k" and java.startswith("<", i + 2):
                    end = java.find(">", i + 3)
                    if end > 0:
                        out.append(f"(?P={java[i + 3 : end]})")
                        i = end + 1
                        continue
            out.append(java[i : i + 2])
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
            out.append(c)
            i += 1
            continue
        if c == "[":
            in_class = True
            out.append(c)
            i += 1
            # A leading ']' (after an optional '^') is a literal, not the end of the class.
            if java.startswith("^", i):
                out.append("^")
                i += 1
            if java.startswith("]", i):
                out.append("]")
                i += 1
            continue
        if java.startswith("(?<", i) and i + 3 < n and java[i + 3] not in "=!":
            out.append("(?P<")
            i += 3
            continue
        out.append(c)
        i += 1
    return "".join(out)


def compile_java_regex(java: str) -> re.Pattern[str]:
    """Compile a Java regex; raises re.error with Python's explanation when it is invalid."""
    return re.compile(translate_pattern(java))


class JavaRegexValidator:
    """ConfigDef validator: the value (or each list entry) must compile as a Java regex."""

    def __call__(self, name: str, value: Any) -> None:
        if value is None:
            return
        for v in value if isinstance(value, list) else [value]:
            try:
                compile_java_regex(v)
            except re.error as e:
                raise config_error(name, v, f"entry must be a Java-compatible regular expression: {e}") from None

    def __str__(self) -> str:
        return "valid regex"


@dataclass(frozen=True)
class JavaReplacement:
    """A parsed replacement string: literal text interleaved with group numbers."""

    parts: tuple[str | int, ...]

    def expand(self, match: re.Match[str]) -> str:
        # An unmatched optional group contributes nothing, as in Java.
        return "".join(p if isinstance(p, str) else (match.group(p) or "") for p in self.parts)


def parse_java_replacement(replacement: str, pattern: re.Pattern[str]) -> JavaReplacement:
    """Parse Java `Matcher.replaceFirst` syntax against `pattern`'s groups.

    Java resolves these at match time and throws there; checking them up front turns a
    per-record failure into a config error. Raises ValueError with Java's wording.
    """
    parts: list[str | int] = []
    literal: list[str] = []
    groups = pattern.groups
    i, n = 0, len(replacement)

    def flush() -> None:
        if literal:
            parts.append("".join(literal))
            literal.clear()

    while i < n:
        c = replacement[i]
        if c == "\\":
            if i + 1 >= n:
                raise ValueError("character to be escaped is missing (end the replacement with \\\\ for a backslash)")
            literal.append(replacement[i + 1])
            i += 2
            continue
        if c != "$":
            literal.append(c)
            i += 1
            continue
        i += 1
        if i >= n:
            raise ValueError("Illegal group reference: group index is missing (write \\$ for a literal dollar sign)")
        if replacement[i] == "{":
            end = replacement.find("}", i + 1)
            if end < 0:
                raise ValueError("named capturing group is missing trailing '}'")
            group_name = replacement[i + 1 : end]
            if not group_name:
                raise ValueError("named capturing group has 0 length name")
            if group_name not in pattern.groupindex:
                raise ValueError(f"No group with name {{{group_name}}}")
            flush()
            parts.append(pattern.groupindex[group_name])
            i = end + 1
            continue
        if not replacement[i].isdigit() or not replacement[i].isascii():
            raise ValueError(
                f"Illegal group reference '${replacement[i]}' (use $1, ${{name}}, or \\$ for a literal dollar sign)"
            )
        # Java takes further digits only while the number stays a valid group: with one group,
        # "$12" means group 1 followed by a literal "2".
        ref = int(replacement[i])
        i += 1
        while i < n and replacement[i].isascii() and replacement[i].isdigit():
            candidate = ref * 10 + int(replacement[i])
            if candidate > groups:
                break
            ref = candidate
            i += 1
        if ref > groups:
            raise ValueError(f"No group {ref}: the regex has {groups} capturing group(s)")
        flush()
        parts.append(ref)
    flush()
    return JavaReplacement(tuple(parts))
