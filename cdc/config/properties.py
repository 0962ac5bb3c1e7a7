"""Java `.properties` files, read exactly as `java.util.Properties.load` reads them.

Worker and connector files written for Kafka Connect must mean the same thing here, so
this is a port of the JDK's `Properties.LineReader` and `loadConvert`, quirks included:

- separators `=`, `:` or whitespace; leading whitespace of keys and values dropped,
  trailing whitespace of values kept;
- `#` and `!` start a comment only at the start of a logical line (so a `#` on a
  continued line is data);
- a line ending in an odd number of backslashes continues on the next line, whose
  leading whitespace is dropped;
- escapes `\\t \\n \\r \\f \\uXXXX`; any other escaped character is itself;
- the last duplicate key wins; a line with a key but no separator has an empty value.

Hand-written rather than `jproperties` (checked: 2.1.2): it gives `#:` comments a
meaning of its own (metadata, which can even raise on a line Java ignores), rejects a
lone `\\uD83D` that Java accepts, and accepts `\\u_1a2`/`\\u+1a2` because it hands the
digits to `int(..., 16)`. Matching Java exactly matters more than saving 200 lines.

Our deliberate departures, each because the Java behaviour can only be a mistake:
a line whose key is empty but which has a value (`=value`) is an error, and a
malformed `\\uXXXX` escape is reported with file and line instead of Java's bare
"Malformed \\uxxxx encoding.".
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Mapping

from cdc.api.errors import ConfigException

__all__ = ["ConfigFileError", "dump_properties", "parse_properties"]

_WHITESPACE = " \t\f"  # Java's whitespace for .properties: no \v, no Unicode spaces
_EOL = "\r\n"
_HEX = "0123456789abcdefABCDEF"


class ConfigFileError(ConfigException):
    """A config file cannot be read or parsed; `str()` is one line `path:line[:col]: message`."""

    def __init__(
        self,
        path: str,
        line_number: int | None,
        message: str,
        *,
        column: int | None = None,
        name: str | None = None,
    ) -> None:
        where = str(path)
        if line_number is not None:
            where += f":{line_number}"
            if column is not None:
                where += f":{column}"
        super().__init__(f"{where}: {message}", name)
        self.path = str(path)
        self.line_number = line_number
        self.column = column
        self.detail = message


# -- reading ------------------------------------------------------------------------------
class _Lines:
    """Maps a character offset in the text to its 1-based natural line number."""

    def __init__(self, text: str) -> None:
        # A natural line ends at \n, at \r\n, or at a lone \r (as in Java).
        starts = [0]
        for i, c in enumerate(text):
            if c == "\n" or (c == "\r" and text[i + 1 : i + 2] != "\n"):
                starts.append(i + 1)
        self._starts = starts

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self._starts, offset)


def _logical_lines(text: str) -> Iterator[tuple[str, list[int]]]:
    """Java's LineReader.readLine: each logical line plus the text offset of every char.

    Mirrors the JDK state machine flag for flag, because the corner cases (a `#` right
    after a lone `\\` line is a comment; a blank line ends a continuation) fall out of it.
    """
    buf: list[str] = []
    offsets: list[int] = []
    skip_whitespace = True
    appended_line_begin = False
    preceding_backslash = False
    i, n = 0, len(text)
    while True:
        if i >= n:
            if buf and preceding_backslash:  # a backslash right before EOF is dropped
                buf.pop()
                offsets.pop()
            # Java returns a lone "\" before EOF as an empty line and stores ""="";
            # that is an accident of its buffer handling, not a property, so we skip it.
            if buf:
                yield "".join(buf), offsets
            return
        c = text[i]
        i += 1
        if skip_whitespace:
            if c in _WHITESPACE:
                continue
            if not appended_line_begin and c in _EOL:
                continue
            skip_whitespace = False
            appended_line_begin = False
        if not buf and c in "#!":
            while i < n and text[i] not in _EOL:
                i += 1
            i += 1  # the terminator ends the comment (a following \n of \r\n is a blank line)
            skip_whitespace = True
            continue
        if c not in _EOL:
            buf.append(c)
            offsets.append(i - 1)
            preceding_backslash = not preceding_backslash if c == "\\" else False
            continue
        # End of a natural line.
        if not buf:
            skip_whitespace = True
            continue
        if i >= n:
            if preceding_backslash:
                buf.pop()
                offsets.pop()
            if buf:
                yield "".join(buf), offsets
            return
        if preceding_backslash:
            # The backslash joins the next natural line, minus its leading whitespace.
            buf.pop()
            offsets.pop()
            skip_whitespace = True
            appended_line_begin = True
            preceding_backslash = False
            if c == "\r" and text[i] == "\n":
                i += 1
            continue
        yield "".join(buf), offsets
        buf, offsets = [], []
        skip_whitespace = True
        preceding_backslash = False


def _split_key_value(line: str) -> tuple[int, int]:
    """Java's load0: (end of key, start of value) within one logical line."""
    limit = len(line)
    key_len = 0
    value_start = limit
    has_sep = False
    preceding_backslash = False
    while key_len < limit:
        c = line[key_len]
        if c in "=:" and not preceding_backslash:
            value_start = key_len + 1
            has_sep = True
            break
        if c in _WHITESPACE and not preceding_backslash:
            value_start = key_len + 1
            break
        preceding_backslash = not preceding_backslash if c == "\\" else False
        key_len += 1
    while value_start < limit:
        c = line[value_start]
        if c not in _WHITESPACE:
            if not has_sep and c in "=:":
                has_sep = True
            else:
                break
        value_start += 1
    return key_len, value_start


class _MalformedEscape(Exception):
    def __init__(self, index: int, snippet: str) -> None:
        self.index, self.snippet = index, snippet


def _unescape(raw: str) -> str:
    """Java's loadConvert; raises _MalformedEscape at the offending backslash."""
    if "\\" not in raw:
        return raw
    out: list[str] = []
    i, end = 0, len(raw)
    while i < end:
        c = raw[i]
        i += 1
        if c != "\\":
            out.append(c)
            continue
        # readLine never leaves an unpaired backslash at the end of a key or value.
        c = raw[i]
        i += 1
        if c == "u":
            digits = raw[i : i + 4]
            if len(digits) < 4 or any(d not in _HEX for d in digits):
                raise _MalformedEscape(i - 2, "\\u" + digits)
            out.append(chr(int(digits, 16)))
            i += 4
        else:
            out.append({"t": "\t", "r": "\r", "n": "\n", "f": "\f"}.get(c, c))
    text = "".join(out)
    # \uXXXX yields UTF-16 code units; join surrogate pairs into one code point as a Java
    # String would read them, leaving lone surrogates as they are (Java keeps them too).
    if any("\ud800" <= ch <= "\udfff" for ch in text):
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return text


def parse_properties(text: str, source: str = "<string>") -> dict[str, str]:
    """Parse `.properties` text the way `java.util.Properties.load(Reader)` does.

    `source` names the text in errors (usually the file path).
    Raises ConfigFileError for a malformed `\\uXXXX` escape or a line with a value but no key.
    """
    lines = _Lines(text)
    result: dict[str, str] = {}
    for line, offsets in _logical_lines(text):
        key_len, value_start = _split_key_value(line)
        raw_key = line[:key_len]
        raw_value = line[value_start:]
        try:
            key = _unescape(raw_key)
        except _MalformedEscape as e:
            raise ConfigFileError(
                source,
                lines.line_of(offsets[e.index]),
                f'malformed \\uXXXX escape in key "{raw_key}"; '
                "a \\u needs 4 hex digits, and a literal backslash is written \\\\",
            ) from None
        try:
            value = _unescape(raw_value)
        except _MalformedEscape as e:
            # Quote only the escape, never the value: it may be a password.
            shown_key = _escape(key, is_key=True, ascii_only=False)  # keeps the message on one line
            raise ConfigFileError(
                source,
                lines.line_of(offsets[value_start + e.index]),
                f'malformed \\uXXXX escape "{e.snippet}" in the value of "{shown_key}"; '
                "a \\u needs 4 hex digits, and a literal backslash is written \\\\",
                name=key or None,
            ) from None
        if not key:
            raise ConfigFileError(
                source,
                lines.line_of(offsets[0]),
                "line has a value but no key; write key=value "
                "(a key that starts with = or : must escape it as \\= or \\:)",
            )
        result[key] = value
    return result


# -- writing ------------------------------------------------------------------------------
def _escape(text: str, *, is_key: bool, ascii_only: bool) -> str:
    """Java's saveConvert: keys escape every space, values only a leading one."""
    out: list[str] = []
    for x, c in enumerate(text):
        if c == "\\":
            out.append("\\\\")
        elif c == " ":
            out.append("\\ " if x == 0 or is_key else " ")
        elif c in "\t\n\r\f":
            out.append({"\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}[c])
        elif c in "=:#!":
            out.append("\\" + c)
        elif ascii_only and not " " <= c <= "~":
            # Escape UTF-16 code units, as Java does, so astral characters become a pair.
            units = c.encode("utf-16-be", "surrogatepass")
            for j in range(0, len(units), 2):
                out.append(f"\\u{int.from_bytes(units[j : j + 2], 'big'):04X}")
        else:
            out.append(c)
    return "".join(out)


def dump_properties(props: Mapping[str, str], *, comments: str | None = None, ascii_only: bool = True) -> str:
    """Write `props` as `.properties` text that `parse_properties` (and Java) reads back unchanged.

    Like `Properties.store(OutputStream)`, non-ASCII characters are written as `\\uXXXX`
    by default, so the file is also read correctly by Java's ISO-8859-1 loader. Unlike
    `store`, no timestamp comment is written, so the output is reproducible. An empty key
    is refused because `parse_properties` refuses it.
    """
    out: list[str] = []
    if comments:
        for line in comments.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
            out.append("#" + _escape_comment(line, ascii_only))
    for key, value in props.items():
        if not key:
            raise ConfigException("a property key may not be empty", key, value)
        out.append(
            _escape(key, is_key=True, ascii_only=ascii_only) + "=" + _escape(value, is_key=False, ascii_only=ascii_only)
        )
    return "".join(line + "\n" for line in out)


def _escape_comment(line: str, ascii_only: bool) -> str:
    if not ascii_only:
        return line
    return "".join(c if " " <= c <= "~" or c == "\t" else _escape(c, is_key=False, ascii_only=True) for c in line)
