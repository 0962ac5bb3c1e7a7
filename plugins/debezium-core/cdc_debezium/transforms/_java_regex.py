"""java.util.regex patterns and Matcher replacement strings on Python's `re`, for the routing SMTs.

Debezium's configs are written for Java: named groups `(?<name>...)`, back references `\\k<name>`,
quoting `\\Q...\\E`, the `\\z` anchor, and replacements with `$1` / `${name}` / `\\$`. Only these
differences are translated; everything else both dialects read alike.
"""

from __future__ import annotations

import re
import warnings

from cdc_debezium.transforms._support import config_error


def _translate(java: str) -> str:
    out: list[str] = []
    i, n = 0, len(java)
    while i < n:
        c = java[i]
        if c == "\\" and i + 1 < n:
            nxt = java[i + 1]
            if nxt == "Q":
                end = java.find("\\E", i + 2)
                out.append(re.escape(java[i + 2 :] if end < 0 else java[i + 2 : end]))
                i = n if end < 0 else end + 2
                continue
            if nxt == "z":
                out.append("\\Z")
            elif nxt == "Z":
                out.append("(?=\\n?\\Z)")
            elif nxt == "k" and java.startswith("<", i + 2):
                end = java.index(">", i + 3)
                out.append(f"(?P={java[i + 3 : end]})")
                i = end + 1
                continue
            else:
                out.append(java[i : i + 2])
            i += 2
            continue
        if java.startswith("(?<", i) and i + 3 < n and java[i + 3] not in "=!":
            out.append("(?P<")
            i += 3
            continue
        out.append(c)
        i += 1
    return "".join(out)


def compile_java(key: str, pattern: str) -> re.Pattern[str]:
    """The compiled pattern, or a ConfigException naming `key` saying why it does not compile."""
    try:
        with warnings.catch_warnings():
            # Python reads `[[a-z]` as one class where Java sees an unclosed nested class: refuse it.
            warnings.simplefilter("error", FutureWarning)
            return re.compile(_translate(pattern))
    except (re.error, ValueError, FutureWarning) as e:
        raise config_error(key, pattern, f"not a valid regular expression ({e}); fix the pattern") from e


def translate_replacement(key: str, replacement: str) -> str:
    """A Java Matcher replacement (`$1`, `${name}`, `\\$`) as a Python `re` template."""
    out: list[str] = []
    i, n = 0, len(replacement)
    while i < n:
        c = replacement[i]
        if c == "\\":
            if i + 1 >= n:
                raise config_error(key, replacement, "character to be escaped is missing at the end")
            out.append("\\\\" if replacement[i + 1] == "\\" else replacement[i + 1])
            i += 2
        elif c == "$":
            if replacement.startswith("{", i + 1):
                end = replacement.find("}", i + 2)
                if end < 0:
                    raise config_error(key, replacement, "named capturing group is missing trailing '}'")
                out.append(f"\\g<{replacement[i + 2 : end]}>")
                i = end + 1
            else:
                j = i + 1
                while j < n and replacement[j].isdigit():
                    j += 1
                if j == i + 1:
                    raise config_error(key, replacement, "illegal group reference: '$' must be followed by a group")
                out.append(f"\\g<{replacement[i + 1 : j]}>")
                i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


class JavaRouter:
    """Kafka's RegexRouter step: a topic fully matching the regex is replaced (replaceFirst)."""

    def __init__(self, regex_key: str, regex: str, replacement_key: str, replacement: str) -> None:
        self.pattern = compile_java(regex_key, regex)
        self.template = translate_replacement(replacement_key, replacement)
        groups = set(self.pattern.groupindex) | {str(i) for i in range(self.pattern.groups + 1)}
        for ref in re.findall(r"\\g<([^>]*)>", self.template):
            if ref not in groups:
                raise config_error(replacement_key, replacement, f"no group {ref} in {regex_key} {regex!r}")

    def route(self, topic: str) -> str:
        match = self.pattern.fullmatch(topic)
        return match.expand(self.template) if match else topic
