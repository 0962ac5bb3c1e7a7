"""Java's `SimpleDateFormat` patterns in UTC, as TimestampRouter and TimestampConverter use them.

Kafka configures both SMTs with a `SimpleDateFormat` pattern (`yyyyMMdd`, `yyyy-MM-dd'T'HH:mm:ss.SSSZ`,
...) fixed to the UTC time zone. `JavaDateFormat` formats and parses epoch milliseconds with the
same pattern letters; a letter Java does not know raises ValueError with Java's message
("Illegal pattern character 'x'"), so callers can turn it into a ConfigException.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
# Letters SimpleDateFormat accepts; the week-based ones (Y, w, W, F, u) are formatted, not parsed.
_KNOWN = set("GyYMLwWDdFEuaHkKhmsSzZX")
_NUMERIC = set("yYMLwWDdFuHkKhmsS")


@dataclass(frozen=True)
class _Token:
    letter: str  # "" for literal text
    count: int
    text: str = ""

    @property
    def numeric(self) -> bool:
        return self.letter in _NUMERIC and not (self.letter in "ML" and self.count >= 3)


def _tokenize(pattern: str) -> list[_Token]:
    tokens: list[_Token] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "'":
            if i + 1 < n and pattern[i + 1] == "'":  # '' is a literal quote
                tokens.append(_Token("", 0, "'"))
                i += 2
                continue
            end = i + 1
            text = []
            while True:
                if end >= n:
                    raise ValueError("Unterminated quote")
                if pattern[end] == "'":
                    if end + 1 < n and pattern[end + 1] == "'":
                        text.append("'")
                        end += 2
                        continue
                    break
                text.append(pattern[end])
                end += 1
            tokens.append(_Token("", 0, "".join(text)))
            i = end + 1
        elif c.isascii() and c.isalpha():
            if c not in _KNOWN:
                raise ValueError(f"Illegal pattern character '{c}'")
            j = i
            while j < n and pattern[j] == c:
                j += 1
            tokens.append(_Token(c, j - i))
            i = j
        else:
            tokens.append(_Token("", 0, c))
            i += 1
    return tokens


class JavaDateFormat:
    """A SimpleDateFormat pattern in UTC: `format(millis)` and `parse(text) -> millis`."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._tokens = _tokenize(pattern)
        self._regex, self._groups = self._parse_regex()

    # -- formatting ------------------------------------------------------------------------
    def format(self, millis: int) -> str:
        moment = _EPOCH + datetime.timedelta(milliseconds=millis)
        return "".join(self._format_token(t, moment, millis) for t in self._tokens)

    @staticmethod
    def _format_token(t: _Token, m: datetime.datetime, millis: int) -> str:
        c, n = t.letter, t.count
        if not c:
            return t.text

        def num(v: int) -> str:
            return str(v).zfill(n)

        if c in "yY":
            year = m.isocalendar().year if c == "Y" else m.year
            return str(year % 100).zfill(2) if n == 2 else num(year)
        if c in "ML":
            if n >= 4:
                return _MONTHS[m.month - 1]
            return _MONTHS[m.month - 1][:3] if n == 3 else num(m.month)
        if c == "E":
            name = _DAYS[m.weekday()]
            return name if n >= 4 else name[:3]
        if c == "a":
            return "AM" if m.hour < 12 else "PM"
        if c == "G":
            return "AD"
        if c in "zZX":
            if c == "z":
                return "Coordinated Universal Time" if n >= 4 else "UTC"
            return "+0000" if c == "Z" else "Z"
        value = {
            "d": m.day,
            "D": m.timetuple().tm_yday,
            "H": m.hour,
            "k": m.hour or 24,
            "K": m.hour % 12,
            "h": m.hour % 12 or 12,
            "m": m.minute,
            "s": m.second,
            "S": millis % 1000,
            "u": m.isoweekday(),
            "w": m.isocalendar().week,
            "W": (m.day - 1 + m.replace(day=1).weekday() + 1) // 7 + 1,
            "F": (m.day - 1) // 7 + 1,
        }[c]
        return num(value)

    # -- parsing ---------------------------------------------------------------------------
    def _parse_regex(self) -> tuple[re.Pattern[str], list[_Token]]:
        parts: list[str] = []
        groups: list[_Token] = []
        for i, t in enumerate(self._tokens):
            if not t.letter:
                parts.append(re.escape(t.text))
                continue
            groups.append(t)
            nxt = self._tokens[i + 1] if i + 1 < len(self._tokens) else None
            if t.numeric:
                # Abutting numeric fields take exactly `count` digits, as SimpleDateFormat does.
                parts.append(rf"(\d{{{t.count}}})" if nxt is not None and nxt.numeric else r"([+-]?\d+)")
            elif t.letter in "ML":
                parts.append("(" + "|".join(sorted(_MONTHS + [m[:3] for m in _MONTHS], key=len, reverse=True)) + ")")
            elif t.letter == "E":
                parts.append("(" + "|".join(sorted(_DAYS + [d[:3] for d in _DAYS], key=len, reverse=True)) + ")")
            elif t.letter == "a":
                parts.append("(AM|PM|am|pm)")
            elif t.letter == "G":
                parts.append("(AD|BC)")
            else:  # z, Z, X
                parts.append(r"(Z|UTC|GMT|Coordinated Universal Time|[+-]\d{2}(?::?\d{2})?)")
        return re.compile("".join(parts), re.IGNORECASE), groups

    def parse(self, text: str) -> int:
        """Epoch milliseconds; ValueError when `text` does not match (trailing text is ignored, as in Java)."""
        match = self._regex.match(text)
        if match is None:
            raise ValueError(f"Unparseable date: {text!r}")
        year, month, day, hour, minute, second, ms, offset = 1970, 1, 1, 0, 0, 0, 0, 0
        pm: bool | None = None
        hour12 = False
        for t, raw in zip(self._groups, match.groups(), strict=True):
            c = t.letter
            if c in "yY":
                year = int(raw)
                if t.count <= 2 and len(raw) == 2:
                    year = _two_digit_year(year)
            elif c in "ML":
                month = int(raw) if raw.isdigit() else _month_number(raw)
            elif c == "d":
                day = int(raw)
            elif c == "D":  # day of the year: counted from January 1st (lenient roll-over does the rest)
                month, day = 1, int(raw)
            elif c in "Hk":
                hour = int(raw) % 24
            elif c in "Kh":
                hour, hour12 = int(raw) % 12, True
            elif c == "m":
                minute = int(raw)
            elif c == "s":
                second = int(raw)
            elif c == "S":
                ms = int(raw)
            elif c == "a":
                pm = raw.upper() == "PM"
            elif c in "zZX":
                offset = _offset_minutes(raw)
        if pm and hour12:  # AM/PM only qualifies h/K; H and k are already hours of the day
            hour += 12
        # Lenient like SimpleDateFormat's default: out-of-range fields roll over into the next unit.
        months = year * 12 + month - 1
        try:
            base = datetime.datetime(months // 12, months % 12 + 1, 1, tzinfo=datetime.UTC)
            moment = base + datetime.timedelta(
                days=day - 1, hours=hour, minutes=minute - offset, seconds=second, milliseconds=ms
            )
        except (ValueError, OverflowError) as e:
            raise ValueError(f"Unparseable date: {text!r}") from e
        delta = moment - _EPOCH
        return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def _month_number(name: str) -> int:
    prefix = name[:3].lower()
    return next(i + 1 for i, m in enumerate(_MONTHS) if m[:3].lower() == prefix)


def _two_digit_year(yy: int) -> int:
    # SimpleDateFormat puts a two-digit year within 80 years before and 20 years after now.
    now = datetime.datetime.now(datetime.UTC).year
    start = now - 80
    year = start - start % 100 + yy
    return year + 100 if year < start else year


def _offset_minutes(raw: str) -> int:
    if raw.upper() in ("Z", "UTC", "GMT", "COORDINATED UNIVERSAL TIME"):
        return 0
    sign = -1 if raw[0] == "-" else 1
    digits = raw[1:].replace(":", "")
    return sign * (int(digits[:2]) * 60 + (int(digits[2:4]) if len(digits) > 2 else 0))
